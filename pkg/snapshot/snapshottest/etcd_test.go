package snapshottest

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"
)

// TestReservedPortsStayReserved: between NewEtcd and Start, another process (here a plain
// listener, as a parallel test package's server would be) cannot take a member's ports, and
// the member then starts on them. With ports that were only "free a moment ago" the listener
// got the port and etcd failed with "address already in use"; a member already named in its
// cluster's --initial-cluster could not move to other ports.
func TestReservedPortsStayReserved(t *testing.T) {
	e := NewEtcd(t, "default", nil)
	for _, u := range []string{e.Endpoint, e.PeerURL} {
		addr, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if l, err := net.Listen("tcp", addr.Host); err == nil {
			_ = l.Close()
			t.Fatalf("another listener took %s between NewEtcd and Start", addr.Host)
		}
	}
	e.Start(t, InitialCluster(e), "new")
	e.WaitReady(t)
	Put(t, e.Client(t), "k", 10, 10)
}

// TestCluster: three members started together form one cluster with a leader, each answering
// on its own endpoint.
func TestCluster(t *testing.T) {
	members := []*Etcd{NewEtcd(t, "m0", nil), NewEtcd(t, "m1", nil), NewEtcd(t, "m2", nil)}
	for _, m := range members {
		m.Start(t, InitialCluster(members...), "new")
	}
	var leader uint64
	for _, m := range members {
		m.WaitReady(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := m.Client(t).Status(ctx, m.Endpoint)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if s.Leader == 0 || (leader != 0 && s.Leader != leader) {
			t.Fatalf("member %s sees leader %x, others %x", m.Name, s.Leader, leader)
		}
		leader = s.Leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ml, err := members[0].Client(t).MemberList(ctx)
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list %v (%v), want 3 members", ml, err)
	}
}
