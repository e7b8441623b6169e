package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRealEtcdAuth: EnableAuth turns a real etcd's authentication on for the Access's user
// (twice is harmless); afterwards membership changes need those credentials, and refused
// credentials are auth errors, not an unreachable cluster.
func TestRealEtcdAuth(t *testing.T) {
	ctx := context.Background()
	seed := snapshottest.NewEtcd(t, "m0", nil)
	seed.Start(t, snapshottest.InitialCluster(seed), "new")
	seed.WaitReady(t)
	connect := func(user, password string) (Client, error) {
		cli, err := New(Config{Endpoints: []string{seed.Endpoint}, Access: etcdaccess.Access{Username: user, Password: password},
			DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
		if err == nil {
			t.Cleanup(func() { _ = cli.Close() })
		}
		return cli, err
	}
	// Credentials before authentication is on: clientv3 goes on without a token.
	root, err := connect("root", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if on, err := root.AuthEnabled(ctx); err != nil || on {
		t.Fatalf("a new etcd: auth enabled %v, %v", on, err)
	}
	for range 2 {
		if err := root.EnableAuth(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if on, err := root.AuthEnabled(ctx); err != nil || !on {
		t.Fatalf("after EnableAuth: auth enabled %v, %v", on, err)
	}
	// The operator's client keeps working: membership and maintenance as root.
	if _, err := root.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	learner, err := root.AddLearner(ctx, "http://m1.invalid:2380")
	if err != nil {
		t.Fatalf("adding a learner as root: %v", err)
	}
	if err := root.Remove(ctx, learner.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Alarms(ctx); err != nil {
		t.Fatal(err)
	}
	if err := root.Defragment(ctx, seed.Endpoint); err != nil {
		t.Fatal(err)
	}

	// No credentials: the list and a change are refused, as auth errors (the operator then
	// stops with AuthFailed instead of taking the cluster for one that does not answer).
	anon, err := connect("", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.MemberList(ctx); !etcdaccess.IsAuthError(err) {
		t.Fatalf("member list without credentials: %v, want an auth error", err)
	}
	if _, err := anon.AddLearner(ctx, "http://m1.invalid:2380"); !etcdaccess.IsAuthError(err) {
		t.Fatalf("adding a learner without credentials: %v, want an auth error", err)
	}
	// A wrong password fails while connecting, as an auth error.
	if _, err := connect("root", "wrong"); !etcdaccess.IsAuthError(err) {
		t.Fatalf("wrong password: %v, want an auth error", err)
	}
}
