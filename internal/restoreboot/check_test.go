package restoreboot

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestCheckMemberAuth: the restore's check of a member reads the keyspace hash and key count of
// a real etcd (also at its pod's address under a name DNS does not know yet), with
// authentication on when it has the root user's credentials (HashKV needs the root role), and
// fails with an auth error without them.
func TestCheckMemberAuth(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/k/", 30, 16)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rev := int64(0)
	if resp, err := cli.Get(ctx, "/k/"); err != nil {
		t.Fatal(err)
	} else {
		rev = resp.Header.Revision
	}
	plain, err := CheckMember(ctx, e.Endpoint, "", etcdaccess.Access{}, rev)
	if err != nil {
		t.Fatal(err)
	}
	// Under a name no DNS knows (a member whose name the cluster DNS has not published yet),
	// at its pod's address: the same figures.
	u, err := url.Parse(e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "c-1.c.ns.svc.example.invalid:" + u.Port()
	if at, err := CheckMember(ctx, u.String(), "127.0.0.1", etcdaccess.Access{}, rev); err != nil || at != plain {
		t.Fatalf("at the pod's address: %+v, %v; at the endpoint: %+v", at, err, plain)
	}
	snapshottest.EnableAuth(t, cli, "s3cret")
	got, err := CheckMember(ctx, e.Endpoint, "", etcdaccess.Access{Username: "root", Password: "s3cret"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Keys != 30 || got.Hash != plain.Hash {
		t.Fatalf("with credentials: %+v; without authentication it was %+v", got, plain)
	}
	if _, err := CheckMember(ctx, e.Endpoint, "", etcdaccess.Access{}, rev); !etcdaccess.IsAuthError(err) {
		t.Fatalf("without credentials: %v, want an auth error", err)
	}
}
