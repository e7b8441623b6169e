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
	"testing"
	"time"
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

// start runs etcd for p until the test ends.
func (p proc) start(t *testing.T, bin, state, initial string) {
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
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
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
	eventually(t, "seed answers", func() error { _, _, err := cli.MemberList(ctx); return err })

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
		// Planner view right after the add: the learner has no pod yet.
		members, _, err := cli.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
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
		_ = members
	}
	members, id, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 3 || id == 0 {
		t.Fatalf("members = %+v (cluster %x), want 3 voting members", members, id)
	}
	var leader uint64
	for _, m := range members {
		if m.IsLearner || !m.Started() {
			t.Fatalf("member %+v is not a started voter", m)
		}
		s, err := cli.Status(ctx, m.ClientURLs[0])
		if err != nil {
			t.Fatal(err)
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
	members, _, _ = cli.MemberList(ctx) // also points the client at the remaining voters
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
	eventually(t, "seed answers", func() error { _, _, err := cli.MemberList(ctx); return err })
	p := newProc(t, "c-1")
	// A learner whose peer URL names its pod, as the controller adds them; then "crash".
	peer := strings.Replace(p.peer, "127.0.0.1", "localhost", 1)
	if _, err := cli.AddLearner(ctx, peer); err != nil {
		t.Fatal(err)
	}
	members, _, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := Observed{Reachable: true, Members: members, Status: map[uint64]EndpointStatus{}, Pods: map[string]PodState{"c-0": {Name: "c-0", Phase: "Running"}}}
	for _, m := range members {
		if m.Started() {
			s, err := cli.Status(ctx, m.ClientURLs[0])
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
