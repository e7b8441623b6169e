package storage

import (
	"fmt"
	"path"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// AmbientPolicy says which buckets a storage block without a credentials Secret may reach with
// the operator's own cloud identity (IRSA, GKE or Azure workload identity, instance roles). In a
// shared cluster that identity is the operator's, not the tenant's: whoever may create an
// EtcdBackup could otherwise read or overwrite any bucket the operator can reach. So it is off
// unless the administrator lists buckets (--ambient-credentials), and it is never sent to an
// endpoint a spec names: only to the provider's own public endpoint.
type AmbientPolicy struct {
	// patterns are "<TYPE>:<bucket glob>" entries, e.g. "S3:prod-etcd-*", "GCS:*".
	patterns []string
	// tenant marks an identity that is the tenant's own (TenantIdentity).
	tenant bool
}

// ParseAmbientPolicy reads the --ambient-credentials entries: "<S3|ABS|GCS>:<bucket>", where the
// bucket may be a path.Match glob ("*" alone: every bucket of that provider). None: off. OSS has
// no ambient identity: its blocks always name an ossSecret.
func ParseAmbientPolicy(entries []string) (AmbientPolicy, error) {
	var p AmbientPolicy
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		typ, glob, ok := strings.Cut(e, ":")
		switch etcdv1beta2.BackupStorageType(typ) {
		case etcdv1beta2.BackupStorageTypeS3, etcdv1beta2.BackupStorageTypeABS, etcdv1beta2.BackupStorageTypeGCS:
		default:
			ok = false
		}
		if _, err := path.Match(glob, ""); !ok || glob == "" || err != nil {
			return AmbientPolicy{}, fmt.Errorf("ambient credentials entry %q: want <S3|ABS|GCS>:<bucket or glob>, e.g. S3:prod-etcd-backups", e)
		}
		p.patterns = append(p.patterns, typ+":"+glob)
	}
	return p, nil
}

// TenantIdentity allows every bucket and endpoint: for the restore seed agent, whose ambient
// identity is its own pod's (the tenant's namespace), not the operator's. The restore operator
// checked the location against its own policy before it made the seed.
var TenantIdentity = AmbientPolicy{tenant: true}

// Check returns nil when l may be opened: it names a credentials Secret, or the policy allows
// the operator's identity for its bucket on the provider's own endpoint. Otherwise an
// AmbientCredentialsDenied failure that says what to do.
func (p AmbientPolicy) Check(l Location) error {
	if l.Secret != "" || p.tenant {
		return nil
	}
	if l.Type == etcdv1beta2.BackupStorageTypeOSS {
		return reason.Errorf(etcdv1beta2.ReasonAmbientCredentialsDenied,
			"OSS bucket %s: the storage block names no credentials Secret, and there are no ambient Alibaba Cloud credentials; set ossSecret", l.Bucket)
	}
	if l.Endpoint != "" {
		return reason.Errorf(etcdv1beta2.ReasonAmbientCredentialsDenied,
			"%s storage at endpoint %s names no credentials Secret: the operator never sends its own cloud identity to an endpoint a spec names; set the block's credentials Secret (%s)", l.Type, l.Endpoint, secretField(l.Type))
	}
	for _, pat := range p.patterns {
		typ, glob, _ := strings.Cut(pat, ":")
		if typ == string(l.Type) {
			if ok, _ := path.Match(glob, l.Bucket); ok {
				return nil
			}
		}
	}
	return reason.Errorf(etcdv1beta2.ReasonAmbientCredentialsDenied,
		"%s bucket %s: the storage block names no credentials Secret, and the operator's own cloud identity is not allowed for this bucket; set %s, or ask the administrator to add %s:%s to the operator's --ambient-credentials",
		l.Type, l.Bucket, secretField(l.Type), l.Type, l.Bucket)
}

func secretField(t etcdv1beta2.BackupStorageType) string {
	switch t {
	case etcdv1beta2.BackupStorageTypeS3:
		return "awsSecret"
	case etcdv1beta2.BackupStorageTypeABS:
		return "absSecret"
	case etcdv1beta2.BackupStorageTypeOSS:
		return "ossSecret"
	default:
		return "gcpSecret"
	}
}
