package cluster

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestAddrsReplaceLookup: with Config.Addrs, a member is reached under a host name no DNS
// knows (a member pod whose name the cluster DNS has not published yet, or still answers
// NXDOMAIN for from its cache), for the member list and for its own status; without it, the
// same client cannot reach it. Over TLS the certificate is still checked against the host
// name, not the address dialed: a certificate for 127.0.0.1 only is refused.
func TestAddrsReplaceLookup(t *testing.T) {
	const host = "m0.cluster.ns.svc.example.invalid" // .invalid never resolves (RFC 6761)
	ctx := context.Background()
	named := func(endpoint string) string {
		u, err := url.Parse(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = host + ":" + u.Port()
		return u.String()
	}
	cfg := func(endpoint string, access etcdaccess.Access, addrs map[string]string) Config {
		return Config{Endpoints: []string{endpoint}, Access: access, DialTimeout: 2 * time.Second, RequestTimeout: 3 * time.Second, Addrs: addrs}
	}
	loopback := map[string]string{host: "127.0.0.1"}

	plain := snapshottest.StartEtcd(t, "")
	ep := named(plain.Endpoint)
	cli, err := New(cfg(ep, etcdaccess.Access{}, loopback))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 1 {
		t.Fatalf("member list through Addrs: %+v, %v", ml, err)
	}
	st, err := cli.Status(ctx, ep)
	if err != nil || st.MemberID != ml.Members[0].ID {
		t.Fatalf("status through Addrs: %+v, %v (member %x)", st, err, ml.Members[0].ID)
	}

	without, err := New(cfg(ep, etcdaccess.Access{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = without.Close() }()
	if _, err := without.MemberList(ctx); err == nil {
		t.Fatalf("member list at %s answered without Addrs: the test's host resolves", ep)
	}

	certs := snapshottest.NewCerts(t) // a server certificate for 127.0.0.1 only
	secure := snapshottest.StartEtcdTLS(t, certs)
	tlsCli, err := New(cfg(named(secure.Endpoint), etcdaccess.Access{TLS: certs.ClientTLS(t)}, loopback))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tlsCli.Close() }()
	// A verification against the address dialed would pass (the certificate names
	// 127.0.0.1); against the host it fails, which gRPC reports as no connection.
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := tlsCli.MemberList(tctx); err == nil {
		t.Fatalf("member list over TLS answered with a certificate that does not name %s", host)
	}
}
