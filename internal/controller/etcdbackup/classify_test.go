package etcdbackup

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// httpErr is an object store's error with an HTTP status, as a provider marks it.
func httpErr(status int) error {
	return backend.MarkStatus(fmt.Errorf("http %d", status), status)
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err       error
		reason    string
		transient bool
	}{
		{fmt.Errorf("x: %w", snapshot.ErrNoHealthyMember), etcdv1beta2.ReasonEtcdUnreachable, true},
		{fmt.Errorf("%w: %w", snapshot.ErrTimeout, snapshot.ErrStream), etcdv1beta2.ReasonTimeout, true},
		{fmt.Errorf("check: %w", snapshot.ErrHashMismatch), etcdv1beta2.ReasonVerificationFailed, false},
		{fmt.Errorf("put: %w", snapshot.ErrChecksumMismatch), etcdv1beta2.ReasonVerificationFailed, true},
		{fmt.Errorf("put: %w", snapshot.ErrTruncated), etcdv1beta2.ReasonVerificationFailed, true},
		{fmt.Errorf("put: %w", snapshot.ErrStream), etcdv1beta2.ReasonSnapshotFailed, true},
		{fmt.Errorf("%w: %w", snapshot.ErrStorage, httpErr(403)), etcdv1beta2.ReasonInvalidCredentials, false},
		{fmt.Errorf("%w: %w", snapshot.ErrStorage, httpErr(401)), etcdv1beta2.ReasonInvalidCredentials, false},
		{fmt.Errorf("%w: %w", snapshot.ErrStorage, httpErr(503)), etcdv1beta2.ReasonStorageUnreachable, true},
		{reason.New(etcdv1beta2.ReasonSecretNotFound, errors.New("gone")), etcdv1beta2.ReasonSecretNotFound, false},
	}
	for _, tc := range cases {
		re := classify(tc.err)
		if re == nil || re.Reason != tc.reason || re.Transient != tc.transient {
			t.Errorf("classify(%v) = %+v, want %s transient=%t", tc.err, re, tc.reason, tc.transient)
		}
	}
	if re := classify(errors.New("apiserver hiccup")); re != nil {
		t.Errorf("an API error must be returned for backoff, got %+v", re)
	}
}
