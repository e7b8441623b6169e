package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// etcdBinary finds the etcd the project builds (hack/build-etcd.sh), or skips.
func etcdBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ETCD_BINARY"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "bin", "etcd-v3.6.16", "etcd")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no etcd binary at %s (run hack/build-etcd.sh or set ETCD_BINARY)", p)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type proc struct {
	name, peer, client string
}

func newProc(t *testing.T, name string) proc {
	return proc{name: name, peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), client: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
}

// start runs etcd for p until the test ends (or until the returned function stops it).
func (p proc) start(t *testing.T, bin, state, initial string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "--name="+p.name, "--data-dir="+filepath.Join(t.TempDir(), p.name),
		"--listen-peer-urls="+p.peer, "--initial-advertise-peer-urls="+p.peer,
		"--listen-client-urls="+p.client, "--advertise-client-urls="+p.client,
		"--initial-cluster="+initial, "--initial-cluster-state="+state, "--initial-cluster-token=test",
		"--unsafe-no-fsync", "--log-level=error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err = f()
		return err == nil, nil
	}) != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestRealEtcdMembership grows a real etcd from one member to three through learners, then
// removes one, checking the member list and statuses after each step.
func TestRealEtcdMembership(t *testing.T) {
	bin := etcdBinary(t)
	ctx := context.Background()
	seed := newProc(t, "m0")
	seed.start(t, bin, "new", "m0="+seed.peer)
	cli, err := New(Config{Endpoints: []string{seed.client}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	eventually(t, "seed answers", func() error { _, err := cli.MemberList(ctx); return err })

	procs := []proc{seed}
	for i := 1; i < 3; i++ {
		p := newProc(t, fmt.Sprintf("m%d", i))
		var m Member
		eventually(t, "add learner "+p.name, func() error {
			var err error
			m, err = cli.AddLearner(ctx, p.peer)
			if err != nil && !errors.Is(err, ErrNotReadyForChange) {
				t.Fatal(err)
			}
			return err
		})
		if !m.IsLearner || m.Started() {
			t.Fatalf("added member = %+v, want an unstarted learner", m)
		}
		procs = append(procs, p)
		var initial []string
		for _, q := range procs {
			initial = append(initial, q.name+"="+q.peer)
		}
		p.start(t, bin, "existing", strings.Join(initial, ","))
		eventually(t, "promote "+p.name, func() error {
			err := cli.Promote(ctx, m.ID)
			if err != nil && !errors.Is(err, ErrLearnerNotReady) {
				t.Logf("promote: %v", err)
			}
			return err
		})
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
		urls[p.name] = p.client
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
	eventually(t, "remove "+victim.Name, func() error {
		err := cli.Remove(ctx, victim.ID)
		if err != nil && !errors.Is(err, ErrNotReadyForChange) {
			t.Fatal(err)
		}
		return err
	})
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
	bin := etcdBinary(t)
	ctx := context.Background()
	seed := newProc(t, "c-0")
	seed.start(t, bin, "new", "c-0="+seed.peer)
	cli, err := New(Config{Endpoints: []string{seed.client}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	eventually(t, "seed answers", func() error { _, err := cli.MemberList(ctx); return err })
	p := newProc(t, "c-1")
	// A learner whose peer URL names its pod, as the controller adds them; then "crash".
	peer := strings.Replace(p.peer, "127.0.0.1", "localhost", 1)
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
			s, err := cli.Status(ctx, seed.client)
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
	bin := etcdBinary(t)
	ctx := context.Background()
	procs := []proc{newProc(t, "m0"), newProc(t, "m1"), newProc(t, "m2")}
	var initial []string
	for _, p := range procs {
		initial = append(initial, p.name+"="+p.peer)
	}
	var stops []func()
	for _, p := range procs {
		stops = append(stops, p.start(t, bin, "new", strings.Join(initial, ",")))
	}
	cli, err := New(Config{Endpoints: []string{procs[0].client}, DialTimeout: 5 * time.Second, RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var healthy Membership
	eventually(t, "linearizable list of 3", func() error {
		healthy, err = cli.MemberList(ctx)
		if err == nil && (!healthy.Linearizable || len(healthy.Members) != 3) {
			err = fmt.Errorf("list %+v", healthy)
		}
		return err
	})
	stops[1]()
	stops[2]()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list from the survivor: %v, want its serializable view", err)
	}
	if ml.Linearizable || len(ml.Members) != 3 || ml.ClusterID != healthy.ClusterID {
		t.Fatalf("without quorum: linearizable %t, %d members, cluster %x; want a serializable list of 3 members of cluster %x",
			ml.Linearizable, len(ml.Members), ml.ClusterID, healthy.ClusterID)
	}
}
