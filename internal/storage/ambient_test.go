package storage

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestAmbientPolicy: without a credentials Secret, the operator's own identity reaches only the
// buckets the administrator listed, and never an endpoint a spec names.
func TestAmbientPolicy(t *testing.T) {
	policy, err := ParseAmbientPolicy([]string{"S3:prod-etcd-backups", " GCS:team-a-* ", ""})
	if err != nil {
		t.Fatal(err)
	}
	allOf, err := ParseAmbientPolicy([]string{"S3:*", "ABS:*", "GCS:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		policy  AmbientPolicy
		loc     Location
		allowed bool
	}{
		{"a Secret is always fine", AmbientPolicy{}, Location{Type: "S3", Bucket: "any", Secret: "aws"}, true},
		{"a Secret with a custom endpoint", AmbientPolicy{}, Location{Type: "S3", Bucket: "any", Secret: "aws", Endpoint: "http://minio:9000"}, true},
		{"off by default", AmbientPolicy{}, Location{Type: "S3", Bucket: "prod-etcd-backups"}, false},
		{"listed bucket", policy, Location{Type: "S3", Bucket: "prod-etcd-backups"}, true},
		{"listed bucket of another provider", policy, Location{Type: "ABS", Bucket: "prod-etcd-backups"}, false},
		{"glob", policy, Location{Type: "GCS", Bucket: "team-a-etcd"}, true},
		{"outside the glob", policy, Location{Type: "GCS", Bucket: "team-b-etcd"}, false},
		// Today's GCS client would send the operator's OAuth token to any endpoint, http too.
		{"listed bucket at a spec's endpoint", policy, Location{Type: "GCS", Bucket: "team-a-etcd", Endpoint: "http://attacker.example"}, false},
		{"seed agent: the tenant's own identity", TenantIdentity, Location{Type: "S3", Bucket: "x", Endpoint: "http://minio:9000"}, true},
		{"OSS with its ossSecret", AmbientPolicy{}, Location{Type: "OSS", Bucket: "any", Secret: "oss"}, true},
		// OSS has no ambient identity: refused whatever the policy lists.
		{"OSS without a Secret", allOf, Location{Type: "OSS", Bucket: "prod-etcd-backups"}, false},
	} {
		err := tc.policy.Check(tc.loc)
		if (err == nil) != tc.allowed || (err != nil && reason.Of(err) != etcdv1beta2.ReasonAmbientCredentialsDenied) {
			t.Errorf("%s: Check = %v, want allowed %v", tc.name, err, tc.allowed)
		}
	}
	for _, bad := range []string{"prod-etcd-backups", "FTP:x", "S3:", "S3:[", ":x", "OSS:x"} {
		if _, err := ParseAmbientPolicy([]string{bad}); err == nil {
			t.Errorf("ParseAmbientPolicy(%q) accepted", bad)
		}
	}
}
