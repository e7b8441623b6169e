//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The kinds here act on the machine the local cluster runs on: its control plane and node
// processes (hack/local-cluster.sh kill, then up), the pod-reachable MinIO (hack/objstores.sh),
// and a member's network namespace. They need the local cluster, and root.

// apiServerRestarted scales 3 -> 5 and, at a seeded point of the scale-up, kills the
// kube-apiserver (SIGKILL, a crash); it stays down for a seeded 5 to 15 s and then starts
// again (hack/local-cluster.sh up). The operators lose their watches and, past the renew
// deadline, their leadership; the scale-up must finish once the API is back.
func apiServerRestarted(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	resize(t, f, ns, 5)
	time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond) //nolint:forbidigo // a seeded point inside the scale-up
	down := time.Duration(5+rng.IntN(11)) * time.Second
	over := crashLocal(t, down, "kube-apiserver")
	waitHealed(t, f, ns, 5)
	return injected{size: 5, over: over, note: fmt.Sprintf("kube-apiserver down %s during the scale-up", down)}
}

// kubeletContainerdRestarted kills the kubelet and containerd (SIGKILL) with a PVC cluster
// running; they stay down for a seeded 5 to 15 s and start again. The containers go on under
// their shims; the kubelet must find them again, with no member restarted from scratch.
func kubeletContainerdRestarted(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	down := time.Duration(5+rng.IntN(11)) * time.Second
	over := crashLocal(t, down, "kubelet", "containerd")
	waitHealed(t, f, ns, 3)
	return injected{size: 3, over: over, note: fmt.Sprintf("kubelet and containerd down %s", down)}
}

// objectStoreKilledMidBackup takes a one-shot backup of the cluster under a prefix in MinIO and
// kills MinIO (SIGKILL, its data kept) at a seeded point while etcd streams the snapshot; MinIO
// stays down for a seeded 3 to 10 s, then starts again on its data. The backup's attempt fails
// (connection refused) and a later one completes; the bucket holds nothing but the verified
// object (no part of the broken upload a listing would take for a backup). Heal counts from
// MinIO's restart to the backup's completion.
func objectStoreKilledMidBackup(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	bind := s3Bind(t)
	return storeFaultMidBackup(t, f, ns, rng, func(sinceStream time.Duration) string {
		down := time.Duration(3+rng.IntN(8)) * time.Second
		restarted := false
		t.Cleanup(func() {
			if !restarted {
				objStores(t, bind, "up")
			}
		})
		objStores(t, bind, "kill", "minio") // the script kills first thing, then waits for the process to go
		t.Logf("fault: MinIO killed %s after the snapshot stream started, down for %s", sinceStream.Round(time.Millisecond), down)
		time.Sleep(down) //nolint:forbidigo // the seeded outage
		objStores(t, bind, "up")
		restarted = true
		return fmt.Sprintf("MinIO down %s", down)
	})
}

// objectStoreStalledMidBackup is the same with MinIO stopped (SIGSTOP: connections stay open,
// nothing answers) for a seeded 10 to 30 s, then continued (SIGCONT).
func objectStoreStalledMidBackup(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	pid := minioPID(t, s3Bind(t))
	return storeFaultMidBackup(t, f, ns, rng, func(sinceStream time.Duration) string {
		stall := time.Duration(10+rng.IntN(21)) * time.Second
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping MinIO (pid %d): %v", pid, err)
		}
		t.Logf("fault: MinIO stopped %s after the snapshot stream started, for %s", sinceStream.Round(time.Millisecond), stall)
		time.Sleep(stall) //nolint:forbidigo // the seeded stall
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatalf("continuing MinIO (pid %d): %v", pid, err)
		}
		return fmt.Sprintf("MinIO stalled %s", stall)
	})
}

// storeFaultMidBackup starts a one-shot backup under a prefix, waits until a member streams
// the snapshot, and at a seeded point of the stream runs fault (an object-store outage that
// returns once the store is back, with a description). The backup must then complete and the
// bucket hold only the verified object; heal counts from the end of the outage.
func storeFaultMidBackup(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand, fault func(sinceStream time.Duration) string) injected {
	bucket := startBackup(t, f, ns, "c/backup", etcdv1beta2.BackupPathPrefix)
	_, seen := streamingMember(t, f, ns, "b")
	time.Sleep(time.Duration(rng.Int64N(int64(killWindow)))) //nolint:forbidigo // a seeded point inside the stream
	what := fault(time.Since(seen))
	over := time.Now()
	b := waitBackupCompleted(t, f, ns, "b")
	verifyBucket(t, bucket, b)
	return injected{size: 3, over: over, note: fmt.Sprintf("%s; the backup (%d MiB) completed after %d attempts, %s after the store was back",
		what, b.Status.Size>>20, b.Status.Attempts, time.Since(over).Round(100*time.Millisecond))}
}

// memberNetworkCut cuts a seeded member off the network for a seeded 15 to 40 s, with iptables
// rules in its pod's network namespace that drop every packet but loopback and the kubelet's
// probes of the metrics port (a partition, not a dead process: the member must not be taken
// for dead and replaced while its data is intact). It falls behind under the load, and once the
// rules are gone it must catch up: every acknowledged write on it too.
func memberNetworkCut(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	pods := memberPods(t, f, ns)
	p := pods[rng.IntN(len(pods))]
	netns := openNetns(t, hostPIDs(t, &p, "etcd")[0])
	cut := time.Duration(15+rng.IntN(26)) * time.Second
	const metricsPort = "2381"
	rules := [][]string{
		{"INPUT", "-p", "tcp", "--dport", metricsPort, "-j", "ACCEPT"},
		{"INPUT", "!", "-i", "lo", "-j", "DROP"},
		{"OUTPUT", "-p", "tcp", "--sport", metricsPort, "-j", "ACCEPT"},
		{"OUTPUT", "!", "-o", "lo", "-j", "DROP"},
	}
	restore := func() {
		for _, chain := range []string{"INPUT", "OUTPUT"} {
			_ = inNetns(netns, "iptables", "-F", chain)
		}
	}
	t.Cleanup(restore)
	for _, r := range rules {
		if err := inNetns(netns, "iptables", append([]string{"-A"}, r...)...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("fault: member %s cut off the network for %s", p.Name, cut)
	time.Sleep(cut) //nolint:forbidigo // the seeded partition
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		if err := inNetns(netns, "iptables", "-F", chain); err != nil {
			t.Fatal(err)
		}
	}
	over := time.Now()
	waitHealed(t, f, ns, 3)
	replaced := true
	for _, q := range memberPods(t, f, ns) {
		if q.UID == p.UID {
			replaced = false
		}
	}
	note := fmt.Sprintf("%s cut for %s, caught up", p.Name, cut)
	if replaced {
		note = fmt.Sprintf("%s cut for %s, replaced", p.Name, cut)
	}
	return injected{size: 3, over: over, note: note}
}

// crashLocal kills components of the local cluster (hack/local-cluster.sh kill), leaves them
// down for the given time and starts them again (up), whatever happens to the run: a shared
// cluster is never left without them. It returns when they were back.
func crashLocal(t *testing.T, down time.Duration, components ...string) time.Time {
	t.Helper()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			localCluster(t, "up")
		}
	})
	localCluster(t, append([]string{"kill"}, components...)...)
	t.Logf("fault: %s killed, down for %s", strings.Join(components, " and "), down)
	time.Sleep(down) //nolint:forbidigo // the seeded outage
	localCluster(t, "up")
	restarted = true
	return time.Now()
}

// localCluster runs hack/local-cluster.sh with the test's environment (CACHE_DIR included).
func localCluster(t *testing.T, args ...string) {
	t.Helper()
	hackScript(t, nil, "local-cluster.sh", args...)
}

// objStores runs hack/objstores.sh for the set on the given address (the pod-reachable one).
func objStores(t *testing.T, bind string, args ...string) {
	t.Helper()
	hackScript(t, []string{"OBJSTORES_BIND=" + bind}, "objstores.sh", args...)
}

func hackScript(t *testing.T, env []string, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(framework.Global(t).RootDir, "hack", script), args...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/%s %s: %v\n%s", script, strings.Join(args, " "), err, tail(string(out), 30))
	}
	t.Logf("hack/%s %s took %s", script, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
}

// s3Bind is the address of the pod-reachable object stores (hack/objstores.sh's OBJSTORES_BIND).
func s3Bind(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(framework.ObjectStores(t).S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return host
}

// minioPID is the PID hack/objstores.sh recorded for the MinIO of the set on bind, checked to
// be a MinIO process.
func minioPID(t *testing.T, bind string) int {
	t.Helper()
	cache := os.Getenv("CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(framework.Global(t).RootDir, ".cache")
	}
	data, err := os.ReadFile(filepath.Join(cache, "objstores", bind, "run", "minio.pid"))
	if err != nil {
		t.Fatalf("the pod-reachable MinIO's PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || !strings.Contains(string(cmdline), "minio") {
		t.Fatalf("pid %d is not a running MinIO (%v)", pid, err)
	}
	return pid
}

// openNetns opens the network namespace of a process and checks that it is not this process's
// own (an iptables rule meant for a pod must never land on the host).
func openNetns(t *testing.T, pid int) *os.File {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/proc/%d/ns/net", pid)
	if target, err := os.Readlink(path); err != nil || target == self {
		t.Fatalf("network namespace of pid %d: %q (%v); this process's is %q", pid, target, err, self)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	return fh
}

// inNetns runs a command in the network namespace netns (held open, so it outlives a restart
// of the process it was found by) with nsenter.
func inNetns(netns *os.File, command string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/proc/self/fd/3", command}, args...)...)
	cmd.ExtraFiles = []*os.File{netns}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nsenter %s %s: %w\n%s", command, strings.Join(args, " "), err, out)
	}
	return nil
}
