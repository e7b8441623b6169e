package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRealEtcdDowngrade: three real etcd 3.6 members downgraded to 3.5 the way the operator
// does it, each step the one Next picks from the members' real answers: the downgrade enabled
// through this package (twice: the second is not an error), the storage of every member
// migrated, then each member (followers first) restarted on the 3.5 binary and its data. Every
// key written before and during the downgrade is read back from 3.5, and once every member
// runs 3.5 etcd ended the downgrade.
func TestRealEtcdDowngrade(t *testing.T) {
	t.Parallel() // mostly waits for etcd (storage migration, quorum protection)
	ctx := context.Background()
	r := startThree(t)
	r.drive(ctx, t, func(int) string { return "3.5.35" })
	r.checkOn(ctx, t, "3.5.35")
	if r.moved != 3 {
		t.Errorf("%d members moved, want 3", r.moved)
	}
	r.checkEnded(ctx, t)
}

// TestRealEtcdDowngradeCancelled: spec.version goes back to 3.6 after one member of three runs
// 3.5: the downgrade is cancelled (CancelDowngrade) before that member is moved back up, and
// every member ends on 3.6 with every key.
func TestRealEtcdDowngradeCancelled(t *testing.T) {
	t.Parallel() // mostly waits for etcd (storage migration, quorum protection)
	ctx := context.Background()
	r := startThree(t)
	r.drive(ctx, t, func(moved int) string {
		if moved == 0 {
			return "3.5.35"
		}
		return "3.6.16"
	})
	r.checkOn(ctx, t, "3.6.16")
	if !r.saw[ActionCancelDowngrade] || r.moved != 2 {
		t.Errorf("steps %v, %d moves; want the downgrade cancelled and one member down and up again", r.saw, r.moved)
	}
}

// TestRealEtcdDowngradeMemberJoins: a member of a cluster without volumes is lost after
// another one runs 3.5. etcd admits no member while the downgrade is enabled, so Next removes
// the lost member, cancels the downgrade, adds a member on 3.6 (the newest release a member
// runs; it joins a cluster that speaks 3.5, as a member runs 3.5) and finishes the downgrade
// without enabling it again (etcd refuses that once a member runs 3.5): three members on 3.5
// with every key.
func TestRealEtcdDowngradeMemberJoins(t *testing.T) {
	t.Parallel() // mostly waits for etcd (storage migration, quorum protection)
	ctx := context.Background()
	r := startThree(t)
	r.pvc = false
	lost := false
	r.drive(ctx, t, func(moved int) string {
		if moved == 1 && !lost {
			lost = true
			for _, name := range []string{"c-0", "c-1", "c-2"} {
				if st, err := r.cli.Status(ctx, r.procs[name].Endpoint); err == nil && st.Version == "3.6.16" && st.Leader != st.MemberID {
					t.Logf("%s (3.6.16) lost with its data", name)
					r.procs[name].Stop()
					delete(r.procs, name)
					break
				}
			}
		}
		return "3.5.35"
	})
	r.checkOn(ctx, t, "3.5.35")
	for _, k := range []ActionKind{ActionRemoveMember, ActionCancelDowngrade, ActionAddMember, ActionPromote} {
		if !r.saw[k] {
			t.Errorf("steps %v: no %s", r.saw, k)
		}
	}
	if r.enabled != 1 {
		t.Errorf("downgrade enabled %d times, want 1", r.enabled)
	}
	r.checkEnded(ctx, t)
}

// realCluster is a cluster of real etcd processes ("pods") that drive changes as the
// controller would.
type realCluster struct {
	procs   map[string]*snapshottest.Etcd
	cli     Client
	kv      *clientv3.Client
	pvc     bool
	moved   int
	enabled int
	saw     map[ActionKind]bool
	last    ActionKind
}

func startThree(t *testing.T) *realCluster {
	t.Helper()
	list := []*snapshottest.Etcd{snapshottest.NewEtcd(t, "c-0", nil), snapshottest.NewEtcd(t, "c-1", nil), snapshottest.NewEtcd(t, "c-2", nil)}
	r := &realCluster{procs: map[string]*snapshottest.Etcd{}, pvc: true, saw: map[ActionKind]bool{}}
	var endpoints []string
	for _, p := range list {
		p.Start(t, snapshottest.InitialCluster(list...), "new")
		r.procs[p.Name] = p
		endpoints = append(endpoints, p.Endpoint)
	}
	cli, err := New(Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	for _, p := range list {
		p.WaitReady(t)
	}
	kv, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kv.Close() })
	snapshottest.Put(t, kv, "/before/", 40, 64)
	r.cli, r.kv = cli, kv
	return r
}

func (r *realCluster) all() []*snapshottest.Etcd {
	var out []*snapshottest.Etcd
	for _, name := range slices.Sorted(maps.Keys(r.procs)) {
		out = append(out, r.procs[name])
	}
	return out
}

// drive takes the steps Next picks from the members' real answers until there is none left,
// with spec.version version(members moved so far); a key is written after each move.
func (r *realCluster) drive(ctx context.Context, t *testing.T, version func(moved int) string) {
	t.Helper()
	// One step per tick: etcd's storage migration and quorum protection take seconds.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for step := 0; ; step++ {
		if step > 500 {
			t.Fatal("the version change did not end in 500 steps")
		}
		if step > 0 {
			<-tick.C
		}
		act := Next(Desired{Name: "c", Size: 3, Version: version(r.moved), PVC: r.pvc}, r.observe(ctx, t))
		if act.Kind != ActionWait && (act.Kind != r.last || step%25 == 0) {
			t.Logf("step %d: %s %s %s (%s)", step, act.Kind, act.Pod, act.Version, act.Message)
		}
		r.saw[act.Kind], r.last = true, act.Kind
		switch act.Kind {
		case ActionNone:
			return
		case ActionEnableDowngrade:
			if act.Version != "3.5" {
				t.Fatalf("EnableDowngrade to %q, want 3.5", act.Version)
			}
			via := r.procs[act.Pod].Endpoint
			if err := r.cli.EnableDowngrade(ctx, via, act.Version); err != nil {
				t.Fatal(err)
			}
			if err := r.cli.EnableDowngrade(ctx, via, act.Version); err != nil {
				t.Fatalf("enabling again: %v, want nil (enabled already)", err)
			}
			r.enabled++
		case ActionCancelDowngrade:
			for range 2 { // the second: none in progress, not an error
				if err := r.cli.CancelDowngrade(ctx, r.procs[act.Pod].Endpoint); err != nil {
					t.Fatal(err)
				}
			}
		case ActionWait:
		case ActionRemoveMember:
			if err := r.cli.Remove(ctx, act.MemberID); err != nil && !errors.Is(err, ErrNotReadyForChange) {
				t.Fatal(err)
			}
		case ActionAddMember:
			// What the controller does in one pass: the learner, then its pod.
			p := snapshottest.NewEtcd(t, act.Pod, nil)
			if _, err := r.cli.AddLearner(ctx, p.PeerURL); err != nil {
				if errors.Is(err, ErrNotReadyForChange) { // etcd's quorum protection, for a few seconds
					continue
				}
				t.Fatal(err)
			}
			p.Dir = snapshottest.BinDirOf("v" + act.Version)
			r.procs[p.Name] = p
			p.Start(t, snapshottest.InitialCluster(r.all()...), "existing")
			p.WaitReady(t)
		case ActionPromote:
			if err := r.cli.Promote(ctx, act.MemberID); err != nil && !errors.Is(err, ErrLearnerNotReady) {
				t.Fatal(err)
			}
		case ActionUpgradeMember:
			// What patching a pod's image does: the member stops and starts on its data with
			// the other release.
			old := r.procs[act.Pod]
			old.Stop()
			again := &snapshottest.Etcd{Name: old.Name, Endpoint: old.Endpoint, PeerURL: old.PeerURL, DataDir: old.DataDir, Dir: snapshottest.BinDirOf("v" + act.Version)}
			r.procs[act.Pod] = again
			again.Start(t, snapshottest.InitialCluster(r.all()...), "new")
			again.WaitReady(t)
			if _, err := r.kv.Put(ctx, fmt.Sprintf("/during/%d", r.moved), "x"); err != nil {
				t.Fatalf("a write after %s moved: %v", act.Pod, err)
			}
			r.moved++
		default:
			t.Fatalf("unexpected step %s: %s", act.Kind, act.Message)
		}
	}
}

// observe is what the controller observes, from real members: the member list and each
// running member's status, and pods whose versions are the members' binaries.
func (r *realCluster) observe(ctx context.Context, t *testing.T) Observed {
	t.Helper()
	ml, err := r.cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := Observed{Reachable: true, Linearizable: ml.Linearizable, ClusterID: ml.ClusterID, RecordedClusterID: ml.ClusterID, Formed: true,
		Members: ml.Members, Status: map[uint64]EndpointStatus{}, Pods: map[string]PodState{}, PVCs: map[string]bool{}}
	for name, p := range r.procs {
		if st, err := r.cli.Status(ctx, p.Endpoint); err == nil {
			o.Status[st.MemberID] = st
		}
		version := strings.TrimPrefix(snapshottest.Version, "v")
		if strings.Contains(p.Dir, strings.TrimPrefix(snapshottest.OldVersion, "v")) {
			version = strings.TrimPrefix(snapshottest.OldVersion, "v")
		}
		o.Pods[name] = PodState{Name: name, Phase: "Running", Version: version}
		o.PVCs[name] = r.pvc
	}
	return o
}

func (r *realCluster) checkOn(ctx context.Context, t *testing.T, version string) {
	t.Helper()
	for _, p := range r.procs {
		st, err := r.cli.Status(ctx, p.Endpoint)
		if err != nil || st.Version != version || len(st.Errors) > 0 || st.IsLearner {
			t.Fatalf("%s at the end: %+v, %v; want a healthy voting %s", p.Name, st, err, version)
		}
	}
	for prefix, n := range map[string]int64{"/before/": 40, "/during/": int64(r.moved)} {
		resp, err := r.kv.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil || resp.Count != n {
			t.Fatalf("on %s: %v, %d keys under %s, want %d", version, err, resp.Count, prefix, n)
		}
	}
}

// checkEnded: etcd 3.5 validates a downgrade to 3.4 only when none is in progress, a read-only
// probe that etcd ended this one.
func (r *realCluster) checkEnded(ctx context.Context, t *testing.T) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "etcd ended the downgrade", testutil.NoError(func() error {
		_, err := r.kv.Downgrade(ctx, clientv3.DowngradeValidate, "3.4")
		return err
	}))
}
