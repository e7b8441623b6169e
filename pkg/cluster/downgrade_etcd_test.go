package cluster

import (
	"context"
	"fmt"
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
	ctx := context.Background()
	procs, cli, kv := startThree(t)
	written := drive(ctx, t, procs, cli, kv, func(int) string { return "3.5.35" })
	checkOn(ctx, t, cli, kv, procs, "3.5.35", written)
	if written != 3 {
		t.Errorf("%d members moved, want 3", written)
	}
	// etcd 3.5 validates a downgrade to 3.4 only when none is in progress: a read-only probe
	// that etcd ended this one.
	testutil.Eventually(t, testutil.Timeout, "etcd ended the downgrade", testutil.NoError(func() error {
		_, err := kv.Downgrade(ctx, clientv3.DowngradeValidate, "3.4")
		return err
	}))
}

// TestRealEtcdDowngradeCancelled: spec.version goes back to 3.6 after one member of three runs
// 3.5: the downgrade is cancelled (CancelDowngrade) before that member is moved back up, and
// every member ends on 3.6 with every key.
func TestRealEtcdDowngradeCancelled(t *testing.T) {
	ctx := context.Background()
	procs, cli, kv := startThree(t)
	sawCancel := false
	written := drive(ctx, t, procs, cli, kv, func(moved int) string {
		if moved == 0 {
			return "3.5.35"
		}
		return "3.6.16"
	}, func(a Action) { sawCancel = sawCancel || a.Kind == ActionCancelDowngrade })
	checkOn(ctx, t, cli, kv, procs, "3.6.16", written)
	if !sawCancel || written != 2 {
		t.Errorf("cancelled %t, %d moves; want the downgrade cancelled and one member down and up again", sawCancel, written)
	}
}

func startThree(t *testing.T) ([]*snapshottest.Etcd, Client, *clientv3.Client) {
	t.Helper()
	procs := []*snapshottest.Etcd{snapshottest.NewEtcd(t, "c-0", nil), snapshottest.NewEtcd(t, "c-1", nil), snapshottest.NewEtcd(t, "c-2", nil)}
	for _, p := range procs {
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
	kv, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kv.Close() })
	snapshottest.Put(t, kv, "/before/", 40, 64)
	return procs, cli, kv
}

// drive takes the steps Next picks from the members' real answers until there is none left,
// with spec.version version(members moved so far); it returns how many members moved (one
// key written after each).
func drive(ctx context.Context, t *testing.T, procs []*snapshottest.Etcd, cli Client, kv *clientv3.Client, version func(moved int) string, seen ...func(Action)) int {
	t.Helper()
	moved := 0
	for step := 0; ; step++ {
		if step > 100 {
			t.Fatal("the version change did not end in 100 steps")
		}
		act := Next(Desired{Name: "c", Size: 3, Version: version(moved), PVC: true}, observeReal(ctx, t, cli, procs))
		t.Logf("step %d: %s %s (%s)", step, act.Kind, act.Pod, act.Message)
		for _, f := range seen {
			f(act)
		}
		switch act.Kind {
		case ActionNone:
			return moved
		case ActionEnableDowngrade:
			if act.Version != "3.5" {
				t.Fatalf("EnableDowngrade to %q, want 3.5", act.Version)
			}
			via := procs[memberIndex(act.Pod)].Endpoint
			if err := cli.EnableDowngrade(ctx, via, act.Version); err != nil {
				t.Fatal(err)
			}
			if err := cli.EnableDowngrade(ctx, via, act.Version); err != nil {
				t.Fatalf("enabling again: %v, want nil (enabled already)", err)
			}
		case ActionCancelDowngrade:
			if err := cli.CancelDowngrade(ctx, procs[memberIndex(act.Pod)].Endpoint); err != nil {
				t.Fatal(err)
			}
			if err := cli.CancelDowngrade(ctx, procs[memberIndex(act.Pod)].Endpoint); err != nil {
				t.Fatalf("cancelling again: %v, want nil (none in progress)", err)
			}
		case ActionWait:
			time.Sleep(200 * time.Millisecond)
		case ActionUpgradeMember:
			// What patching a pod's image does: the member stops and starts on its data with
			// the other release.
			i := memberIndex(act.Pod)
			procs[i].Stop()
			again := &snapshottest.Etcd{Name: procs[i].Name, Endpoint: procs[i].Endpoint, PeerURL: procs[i].PeerURL, DataDir: procs[i].DataDir,
				Dir: snapshottest.BinDirOf("v" + act.Version)}
			again.Start(t, snapshottest.InitialCluster(procs...), "new")
			procs[i] = again
			again.WaitReady(t)
			if _, err := kv.Put(ctx, fmt.Sprintf("/during/%d", moved), "x"); err != nil {
				t.Fatalf("a write after %s moved: %v", act.Pod, err)
			}
			moved++
		default:
			t.Fatalf("unexpected step %s: %s", act.Kind, act.Message)
		}
	}
}

// observeReal is what the controller observes, from real members: the member list and each
// member's status, and pods whose versions are the members' binaries.
func observeReal(ctx context.Context, t *testing.T, cli Client, procs []*snapshottest.Etcd) Observed {
	t.Helper()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := Observed{Reachable: true, Linearizable: ml.Linearizable, ClusterID: ml.ClusterID, RecordedClusterID: ml.ClusterID, Formed: true,
		Members: ml.Members, Status: map[uint64]EndpointStatus{}, Pods: map[string]PodState{}, PVCs: map[string]bool{}}
	for _, p := range procs {
		st, err := cli.Status(ctx, p.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		o.Status[st.MemberID] = st
		version := strings.TrimPrefix(snapshottest.Version, "v")
		if strings.Contains(p.Dir, strings.TrimPrefix(snapshottest.OldVersion, "v")) {
			version = strings.TrimPrefix(snapshottest.OldVersion, "v")
		}
		o.Pods[p.Name] = PodState{Name: p.Name, Phase: "Running", Version: version}
		o.PVCs[p.Name] = true
	}
	return o
}

func checkOn(ctx context.Context, t *testing.T, cli Client, kv *clientv3.Client, procs []*snapshottest.Etcd, version string, written int) {
	t.Helper()
	for _, p := range procs {
		st, err := cli.Status(ctx, p.Endpoint)
		if err != nil || st.Version != version || len(st.Errors) > 0 {
			t.Fatalf("%s at the end: %+v, %v; want a healthy %s", p.Name, st, err, version)
		}
	}
	for prefix, n := range map[string]int64{"/before/": 40, "/during/": int64(written)} {
		resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil || resp.Count != n {
			t.Fatalf("on %s: %v, %d keys under %s, want %d", version, err, resp.Count, prefix, n)
		}
	}
}
