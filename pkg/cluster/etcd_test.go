package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// startSeed starts a one-member cluster and returns it with a client of this package.
func startSeed(t *testing.T, name string) (*snapshottest.Etcd, Client) {
	t.Helper()
	seed := snapshottest.NewEtcd(t, name, nil)
	seed.Start(t, snapshottest.InitialCluster(seed), "new")
	seed.WaitReady(t)
	cli, err := New(Config{Endpoints: []string{seed.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return seed, cli
}

// TestRealEtcdMembership grows a real etcd from one member to three through learners, then
// removes one, checking the member list and statuses after each step.
func TestRealEtcdMembership(t *testing.T) {
	ctx := context.Background()
	seed, cli := startSeed(t, "m0")

	procs := []*snapshottest.Etcd{seed}
	for i := 1; i < 3; i++ {
		p := snapshottest.NewEtcd(t, fmt.Sprintf("m%d", i), nil)
		var m Member
		testutil.Eventually(t, testutil.Timeout, "add learner "+p.Name, testutil.NoError(func() error {
			var err error
			m, err = cli.AddLearner(ctx, p.PeerURL)
			if err != nil && !errors.Is(err, ErrNotReadyForChange) {
				t.Fatal(err)
			}
			return err
		}))
		if !m.IsLearner || m.Started() {
			t.Fatalf("added member = %+v, want an unstarted learner", m)
		}
		procs = append(procs, p)
		p.Start(t, snapshottest.InitialCluster(procs...), "existing")
		testutil.Eventually(t, testutil.Timeout, "promote "+p.Name, testutil.NoError(func() error {
			err := cli.Promote(ctx, m.ID)
			if err != nil && !errors.Is(err, ErrLearnerNotReady) {
				t.Logf("promote: %v", err)
			}
			return err
		}))
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	members := ml.Members
	if len(members) != 3 || ml.ClusterID == 0 || !ml.Linearizable {
		t.Fatalf("members = %+v (cluster %x, linearizable %t), want 3 voting members, linearizable", members, ml.ClusterID, ml.Linearizable)
	}
	urls := map[string]string{}
	for _, p := range procs {
		urls[p.Name] = p.Endpoint
	}
	var leader uint64
	for _, m := range members {
		if m.IsLearner || !m.Started() {
			t.Fatalf("member %+v is not a started voter", m)
		}
		s, err := cli.Status(ctx, urls[m.Name])
		if err != nil {
			t.Fatal(err)
		}
		if s.MemberID != m.ID {
			t.Fatalf("status of %s answered by member %x, want %x", m.Name, s.MemberID, m.ID)
		}
		leader = s.Leader
	}
	// Remove a follower, as the planner would when shrinking.
	var victim Member
	for _, m := range members {
		if m.ID != leader {
			victim = m
		}
	}
	testutil.Eventually(t, testutil.Timeout, "remove "+victim.Name, testutil.NoError(func() error {
		err := cli.Remove(ctx, victim.ID)
		if err != nil && !errors.Is(err, ErrNotReadyForChange) {
			t.Fatal(err)
		}
		return err
	}))
	ml, _ = cli.MemberList(ctx)
	members = ml.Members
	if err := cli.Remove(ctx, victim.ID); err != nil {
		t.Fatalf("removing an already removed member: %v, want nil", err)
	}
	if len(members) != 2 {
		t.Fatalf("after removal: %d members, want 2", len(members))
	}
}

// TestRealEtcdHalfDoneAdd shows the crash window between MemberAdd and the pod: the planner,
// fed the real member list, asks for the missing member's "pod" (process), and the member
// then starts and is promoted.
func TestRealEtcdHalfDoneAdd(t *testing.T) {
	ctx := context.Background()
	seed, cli := startSeed(t, "c-0")
	p := snapshottest.NewEtcd(t, "c-1", nil)
	// A learner whose peer URL names its pod, as the controller adds them; then "crash".
	peer := strings.Replace(p.PeerURL, "127.0.0.1", "localhost", 1)
	if _, err := cli.AddLearner(ctx, peer); err != nil {
		t.Fatal(err)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := Observed{Reachable: true, Linearizable: ml.Linearizable, ClusterID: ml.ClusterID, RecordedClusterID: ml.ClusterID, Members: ml.Members,
		Status: map[uint64]EndpointStatus{}, Pods: map[string]PodState{"c-0": {Name: "c-0", Phase: "Running"}}}
	for _, m := range ml.Members {
		if m.Started() {
			s, err := cli.Status(ctx, seed.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			o.Status[m.ID] = s
		}
	}
	// The learner's pod name comes from its peer URL host: "localhost" here.
	act := Next(Desired{Name: "c", Size: 2}, o)
	if act.Kind != ActionCreatePod || act.Pod != "localhost" {
		t.Fatalf("Next after a half-done add = %+v, want CreatePod for the added member", act)
	}
}

// TestRealEtcdMemberListWithoutQuorum: with two of three members down, the survivor still
// lists the members (so the operator sees the loss) but the list is not linearizable (so the
// operator acts on none of it).
func TestRealEtcdMemberListWithoutQuorum(t *testing.T) {
	ctx := context.Background()
	procs := []*snapshottest.Etcd{snapshottest.NewEtcd(t, "m0", nil), snapshottest.NewEtcd(t, "m1", nil), snapshottest.NewEtcd(t, "m2", nil)}
	for _, p := range procs {
		p.Start(t, snapshottest.InitialCluster(procs...), "new")
	}
	cli, err := New(Config{Endpoints: []string{procs[0].Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var healthy Membership
	testutil.Eventually(t, testutil.Timeout, "linearizable list of 3", testutil.NoError(func() error {
		healthy, err = cli.MemberList(ctx)
		if err == nil && (!healthy.Linearizable || len(healthy.Members) != 3) {
			err = fmt.Errorf("list %+v", healthy)
		}
		return err
	}))
	procs[1].Stop()
	procs[2].Stop()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list from the survivor: %v, want its serializable view", err)
	}
	if ml.Linearizable || len(ml.Members) != 3 || ml.ClusterID != healthy.ClusterID {
		t.Fatalf("without quorum: linearizable %t, %d members, cluster %x; want a serializable list of 3 members of cluster %x",
			ml.Linearizable, len(ml.Members), ml.ClusterID, healthy.ClusterID)
	}
}
