package capture

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestCaptureMemberLoss: the member the capture watches is killed while writes go on through
// the others, and the caller moves the client to the remaining members (as the operator does
// when it replaces a member): the capture goes on without gap or duplicate.
func TestCaptureMemberLoss(t *testing.T) {
	members := []*snapshottest.Etcd{snapshottest.NewEtcd(t, "m0", nil), snapshottest.NewEtcd(t, "m1", nil), snapshottest.NewEtcd(t, "m2", nil)}
	for _, m := range members {
		m.Start(t, snapshottest.InitialCluster(members...), "new")
	}
	for _, m := range members {
		m.WaitReady(t)
	}
	// The capture's client knows only m0; the writers' only m1 and m2.
	watchCli := members[0].Client(t)
	writeCli, err := clientv3.New(clientv3.Config{Endpoints: []string{members[1].Endpoint, members[2].Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writeCli.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	st, err := watchCli.Status(ctx, members[0].Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	id := snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: st.Header.ClusterId}
	start := revision(t, writeCli) + 1
	b := memory.New()
	r := run(t, testConfig(t, watchCli, b, id, start))

	wait := startLoad(writeCli, 2, 600)
	waitFor(t, 10*time.Second, "two segments uploaded", func() (bool, string) { return r.c.Progress().Segments >= 2, "not yet" })
	members[0].Stop()
	killedAt := r.c.Progress().AppendedRevision
	watchCli.SetEndpoints(members[1].Endpoint, members[2].Endpoint)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	last := revision(t, writeCli)
	if last <= killedAt {
		t.Fatalf("the load ended at %d, before the member was killed at %d", last, killedAt)
	}
	r.waitUploaded(t, last, 15*time.Second)
	checkOK(t, b, id, start, last)
	compareWithEtcd(t, writeCli, b, id, start, last)
	t.Logf("member killed after revision %d was appended; the capture reached %d", killedAt, last)
}
