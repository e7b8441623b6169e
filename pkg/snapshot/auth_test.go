package snapshot_test

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestTakeAuth: from an etcd with authentication on, a backup with the root user's credentials
// is stored and verified; without credentials or with a wrong password the backup fails with an
// auth error (which the backup operator reports as AuthFailed) and stores nothing.
func TestTakeAuth(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/auth/", 20, 64)
	snapshottest.EnableAuth(t, cli, "s3cret")

	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"root", "root", "s3cret", true},
		{"no credentials", "", "", false},
		{"wrong password", "root", "wrong", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(e.Endpoint)
			cfg.Access = etcdaccess.Access{Username: tc.user, Password: tc.password}
			store := memory.New()
			res, err := snapshot.Take(t.Context(), cfg, store)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if got, size := snapshottest.ObjectSHA256(t, store, res.Key); got != res.SHA256 || size != res.Size {
					t.Fatalf("stored %s/%d, result %s/%d", got, size, res.SHA256, res.Size)
				}
				return
			}
			if !etcdaccess.IsAuthError(err) {
				t.Fatalf("err = %v, want an auth error", err)
			}
			if objs, _ := store.List(t.Context(), ""); len(objs) != 0 {
				t.Fatalf("objects stored after a refused backup: %v", objs)
			}
		})
	}
}
