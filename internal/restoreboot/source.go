package restoreboot

import (
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Source is a backup object to restore and what it must be.
type Source struct {
	// Loc is the object and how to reach it.
	Loc storage.Location
	// Expect is the object's size and sha256; zero fields are not checked.
	Expect restoreseed.Expect
	// RevisionBump raises the restored revision this far and marks the rest compacted.
	RevisionBump int64
}

// FromSpec resolves a cluster's bootstrap.restore.source. A source without a credentials
// Secret is refused (InvalidSpec): member pods have no cloud identity of the operator's, and a
// restore that could not read the backup would only fail later, in every member.
func FromSpec(s *etcdv1beta2.RestoreSource) (Source, error) {
	loc, err := storage.FromSource(s.StorageType, s.BackupSource)
	if err != nil {
		return Source{}, err
	}
	if loc.Secret == "" {
		return Source{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "bootstrap.restore.source names no credentials Secret for %s: the member pods that fetch the backup have no cloud identity of the operator's; name the Secret in the %s block", loc.URL(), s.StorageType)
	}
	bump := int64(etcdv1beta2.DefaultRevisionBump)
	if s.RevisionBump != nil {
		bump = *s.RevisionBump
	}
	return Source{Loc: loc, Expect: restoreseed.Expect{Size: s.Size, SHA256: s.SHA256}, RevisionBump: bump}, nil
}

// TimeoutBase is the part of a restore's deadline that does not depend on the backup's size:
// pods starting, the cluster forming, members verified.
const TimeoutBase = 20 * time.Minute

// Timeout bounds a whole restore of a backup of size bytes: long enough to move and restore a
// multi-GiB backup twice over a slow store, and for the cluster to form.
func Timeout(size int64) time.Duration {
	return TimeoutBase + 2*snapshot.DefaultTimeout(size)
}
