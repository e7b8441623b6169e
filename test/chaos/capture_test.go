//go:build e2e && chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// captureInterval is the segment interval of the capture kinds: a fault lands inside a segment
// at a seeded point of it.
const captureInterval = 3 * time.Second

// The capture kinds (issue 29) run an EtcdBackupSchedule with continuousCapture on the cluster
// under load, fault the capture at a seeded point inside an open segment, and then require that
// the capture goes on and that the segments hold every revision from the capture's start to a
// revision written after the fault exactly once (capture.Check: no gap, no duplicate).

// backupOperatorKilledMidSegment kills the backup operator's process from the host (a crash:
// the open segment and any segment not yet uploaded are lost with it) and force-deletes its
// pod; the next operator must resume after the last revision stored.
func backupOperatorKilledMidSegment(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	return captureFault(t, f, ns, rng, func() string {
		op := runningPod(t, f, framework.OperatorNamespace, map[string]string{"app.kubernetes.io/name": "backup-operator"})
		kill(t, hostPIDs(t, op, "backup-operator"))
		t.Logf("fault: backup operator %s killed", op.Name)
		killOperator(t, f, "backup-operator")
		return "backup operator killed"
	})
}

// objectStoreStoppedMidSegment stops MinIO (SIGSTOP: connections stay open, nothing answers)
// for a seeded 5 to 20 s: several segments close meanwhile and wait in memory; once MinIO goes
// on they are stored in order.
func objectStoreStoppedMidSegment(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	return captureFault(t, f, ns, rng, func() string {
		pid := minioPID(t, s3Bind(t))
		down := time.Duration(5+rng.IntN(16)) * time.Second
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		t.Logf("fault: MinIO stopped for %s", down)
		time.Sleep(down) //nolint:forbidigo // the seeded outage
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("MinIO stopped %s", down)
	})
}

// captureMemberKilled kills the member whose etcd serves the capture's watch (the member with
// watchers, from its metrics), its process from the host and then its pod: the watch moves to
// another member and restarts after the last revision received.
func captureMemberKilled(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	return captureFault(t, f, ns, rng, func() string {
		pod, watchers := watchingMember(t, f, ns)
		for _, p := range memberPods(t, f, ns) {
			if p.Name == pod {
				kill(t, hostPIDs(t, &p, "etcd"))
			}
		}
		forceDelete(t, f, ns, pod)
		waitHealed(t, f, ns, 3)
		return fmt.Sprintf("member %s (%d watchers) killed", pod, watchers)
	})
}

// captureFault starts the capture of cluster c into a new bucket, waits for its first stored
// segment, runs fault at a seeded point of the next segment, and checks the capture across it.
func captureFault(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand, fault func() string) injected {
	t.Helper()
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cap"},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "0 0 1 1 *",
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
				BackupSource: bucket.Source("c/capture", "aws"),
			}},
			ContinuousCapture: &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To(int32(captureInterval / time.Second))},
		},
	})
	cs := waitCaptureStatus(t, f, ns)
	bk := waitBackupCompleted(t, f, ns, cs.LastBackupRequest)
	prefix, info, ok := snapshot.SplitKey(strings.TrimPrefix(bk.Status.Location, "S3://"+bucket.Name+"/"))
	if !ok || !info.Tagged() {
		t.Fatalf("backup %s has no cluster identity", bk.Status.Location)
	}
	id, from := info.Identity, cs.StartRevision
	stored := func() int64 {
		h, err := capture.LastCaptured(t.Context(), bucket.Backend(), prefix, id)
		if err != nil {
			t.Fatalf("reading the capture: %v", err)
		}
		return h.LastRevision
	}
	framework.Eventually(t, time.Minute, "the first segment stored", func(context.Context) (bool, error) {
		return stored() >= from, nil
	})
	// A seeded point inside the segment that opens next.
	first := stored()
	framework.Eventually(t, time.Minute, "the next segment stored", func(context.Context) (bool, error) {
		return stored() > first, nil
	})
	time.Sleep(time.Duration(rng.Int64N(int64(captureInterval)))) //nolint:forbidigo // a seeded point inside an open segment
	before := stored()
	what := fault()
	over := time.Now()

	// The capture goes on: it stores a revision written after the fault.
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	var target int64
	framework.Eventually(t, time.Minute, "the cluster's revision after the fault", func(ctx context.Context) (bool, error) {
		resp, err := cli.Get(ctx, "capture-probe")
		if err != nil {
			return false, err
		}
		target = resp.Header.Revision
		return true, nil
	})
	framework.Eventually(t, healTimeout, fmt.Sprintf("the capture to reach revision %d", target), func(context.Context) (bool, error) {
		last := stored()
		return last >= target, fmt.Errorf("stored up to %d", last)
	})
	resumed := time.Since(over)
	rep, err := capture.Check(t.Context(), bucket.Backend(), prefix, id, from, target)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("capture of revisions %d-%d across the fault: gaps %v, duplicates %v, invalid segments %v", from, target, rep.Gaps, rep.Duplicates, rep.Invalid)
	}
	return injected{size: 3, over: over, note: fmt.Sprintf("%s with revision %d stored; revisions %d-%d in %d segments, no gap, no duplicate; revision %d stored %s after the fault",
		what, before, from, target, rep.Segments, target, resumed.Round(100*time.Millisecond))}
}

// waitCaptureStatus waits until schedule cap is Capturing after the backup it requested.
func waitCaptureStatus(t *testing.T, f *framework.Framework, ns string) *etcdv1beta2.CaptureStatus {
	t.Helper()
	var s etcdv1beta2.EtcdBackupSchedule
	framework.Eventually(t, 3*time.Minute, "schedule cap Capturing", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cap"}, &s); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing)
		if c == nil || c.Status != metav1.ConditionTrue || s.Status.Capture == nil || s.Status.Capture.LastBackupRequest == "" {
			return false, fmt.Errorf("condition Capturing %+v, status.capture %+v", c, s.Status.Capture)
		}
		return true, nil
	})
	return s.Status.Capture
}

// watchingMember is the member pod whose etcd has the most watchers
// (etcd_debugging_mvcc_watcher_total on its metrics port, read at the pod's IP): the one
// serving the capture's watch, the only watch on the cluster.
func watchingMember(t *testing.T, f *framework.Framework, ns string) (string, int) {
	t.Helper()
	best, most := "", -1
	for _, p := range memberPods(t, f, ns) {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		if n := watchers(t, p.Status.PodIP); n > most {
			best, most = p.Name, n
		}
	}
	if most <= 0 {
		t.Fatalf("no member of %s has a watcher", ns)
	}
	return best, most
}

// watchers reads etcd_debugging_mvcc_watcher_total from the member's metrics at ip.
func watchers(t *testing.T, ip string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":2381/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reading the metrics of %s: %v", ip, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_debugging_mvcc_watcher_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			return int(n)
		}
	}
	return 0
}
