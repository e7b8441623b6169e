package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRealEtcdCorruptMemberFound: three real etcd members with the periodic corruption check
// on; one follower's data is altered while it is stopped. etcd raises CORRUPT; the members'
// hashes read through this package prove that follower (PlanCorrupt), and removing it and
// clearing the alarm gives the other two back their writes, with the data they had.
func TestRealEtcdCorruptMemberFound(t *testing.T) {
	ctx := context.Background()
	procs := []*snapshottest.Etcd{snapshottest.NewEtcd(t, "m0", nil), snapshottest.NewEtcd(t, "m1", nil), snapshottest.NewEtcd(t, "m2", nil)}
	for _, p := range procs {
		p.Args = []string{"--corrupt-check-time=1s"}
		p.Start(t, snapshottest.InitialCluster(procs...), "new")
	}
	endpoints := []string{procs[0].Endpoint, procs[1].Endpoint, procs[2].Endpoint}
	cli, err := New(Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	for _, p := range procs {
		p.WaitReady(t)
	}
	kv := procs[0].Client(t)
	snapshottest.Put(t, kv, "/data/", 50, 64)

	// A follower, stopped, its newest value altered, started again.
	var bad *snapshottest.Etcd
	var badID uint64
	for _, p := range procs {
		st, err := cli.Status(ctx, p.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader != st.MemberID {
			bad, badID = p, st.MemberID
			break
		}
	}
	for _, p := range procs {
		if p != bad {
			kv = p.Client(t) // a client of a member that stays
			break
		}
	}
	// A defragmentation commits the member's backend: killed right after the writes, its
	// file could still miss them (etcd commits every 100 ms; the rest is in its WAL).
	if err := cli.Defragment(ctx, bad.Endpoint); err != nil {
		t.Fatal(err)
	}
	bad.Stop()
	snapshottest.AlterNewestValue(t, filepath.Join(bad.DataDir, "member", "snap", "db"))
	again := &snapshottest.Etcd{Name: bad.Name, Endpoint: bad.Endpoint, PeerURL: bad.PeerURL, DataDir: bad.DataDir, Args: bad.Args}
	again.Start(t, snapshottest.InitialCluster(procs...), "new")
	again.WaitReady(t)

	var alarms []Alarm
	testutil.Eventually(t, testutil.Timeout, "etcd's CORRUPT alarm", testutil.NoError(func() error {
		alarms, err = cli.Alarms(ctx)
		if err == nil && len(CorruptAlarms(alarms)) == 0 {
			err = fmt.Errorf("alarms %v", alarms)
		}
		return err
	}))
	if _, err := kv.Put(ctx, "/refused", "x"); err == nil {
		t.Fatal("a write was taken under the CORRUPT alarm")
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var plan CorruptPlan
	testutil.Eventually(t, testutil.Timeout, "the altered member proven", testutil.NoError(func() error {
		hashes := map[uint64]KVHash{}
		for _, p := range procs {
			h, err := cli.HashKV(ctx, p.Endpoint, 0)
			if err != nil {
				return err
			}
			hashes[h.MemberID] = h
		}
		plan = PlanCorrupt(Observed{Members: ml.Members, Linearizable: ml.Linearizable}, 3, alarms, hashes)
		if plan.Replace.ID != badID {
			return fmt.Errorf("plan replaces %x (%s), want %x (%s)", plan.Replace.ID, plan.Replace.PodName(), badID, bad.Name)
		}
		return nil
	}))
	t.Logf("plan: %s", plan.Why)
	// etcd refuses the removal until the other members have been connected for its health
	// interval (5 s), counting the freshly restarted member out: the operator retries too.
	testutil.Eventually(t, testutil.Timeout, "the altered member removed", testutil.NoError(func() error {
		err := cli.Remove(ctx, badID)
		if err != nil && !errors.Is(err, ErrNotReadyForChange) {
			t.Fatal(err)
		}
		return err
	}))
	var via string // a member that stays
	for _, p := range procs {
		if p != bad {
			via = p.Endpoint
		}
	}
	for _, a := range plan.Disarm {
		if err := cli.Disarm(ctx, via, a); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, testutil.Timeout, "writes taken again", testutil.NoError(func() error {
		_, err := kv.Put(ctx, "/after", "ok")
		return err
	}))
	resp, err := kv.Get(ctx, "/data/", clientv3.WithPrefix())
	if err != nil || resp.Count != 50 {
		t.Fatalf("after the recovery: %v, %d keys under /data/, want 50", err, resp.Count)
	}
}
