package etcdbackupschedule

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// capturing reads the schedule's Capturing condition as status/reason.
func capturing(s *etcdv1beta2.EtcdBackupSchedule) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "none"
}

// TestContinuousCapture runs a schedule with continuousCapture against a real etcd and MinIO,
// through the backup operator's two controllers:
//   - with no backup yet, the capture starts a full backup and continues it;
//   - every revision after the backup is stored once (capture.Check: no gap, no duplicate), and
//     status.capture says how far;
//   - a capture stopped while writes go on (the schedule suspended, as an operator restart stops
//     it) resumes after the last revision stored, without gap;
//   - when etcd compacted the revisions the capture needs, it starts a new full backup and
//     continues that one, and retention then deletes the segments no backup kept needs.
func TestContinuousCapture(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	ns := namespace(t)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	snapshottest.Put(t, cli, "/before/", 20, 32)
	clockBetweenRuns(time.Hour)
	s := newSchedule(ns, "cc", "0 * * * *", []string{e.Endpoint}, bucket, "aws")
	s.Spec.Retention = &etcdv1beta2.RetentionPolicy{MaxBackups: ptr.To[int32](1)}
	s.Spec.ContinuousCapture = &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To[int32](1)}
	createSchedule(t, s)

	store, err := (&Reconciler{Client: k8s, Options: options.New("backup-operator")}).openTemplateStore(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	prefix := store.Key
	id := snapshot.Identity{Namespace: ns, Cluster: snapshot.UnknownCluster, ClusterID: clusterIDOf(t, cli, e.Endpoint)}

	// The capture asks for a full backup and continues it.
	first := waitCapturing(t, ns, "cc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.StartRevision > 0 })
	if first.Status.Capture.LastBackupRequest == "" || first.Status.LastSuccessfulBackup != first.Status.Capture.LastBackupRequest {
		t.Fatalf("the capture did not start from the backup it requested: %+v, newest success %q", first.Status.Capture, first.Status.LastSuccessfulBackup)
	}
	base := newestBackup(t, store, prefix, id)
	if first.Status.Capture.StartRevision != base.Revision+1 || first.Status.Capture.ClusterID != fmt.Sprintf("%016x", id.ClusterID) {
		t.Fatalf("status.capture = %+v; want start %d (after the backup %s)", first.Status.Capture, base.Revision+1, base.Key)
	}

	// Every revision written is captured once.
	snapshottest.Put(t, cli, "/during/", 200, 32)
	top := revisionOf(t, cli)
	s = waitCapturing(t, ns, "cc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.CapturedRevision >= top })
	if s.Status.Capture.CapturedTime == nil || s.Status.Capture.Segments == 0 || s.Status.Capture.EtcdRevision < top {
		t.Fatalf("status.capture = %+v after revision %d", s.Status.Capture, top)
	}
	checkCapture(t, store, prefix, id, base.Revision+1, top)

	// Stopped while writes go on, the capture resumes after the last revision stored.
	suspendCapture(t, ns, "cc")
	snapshottest.Put(t, cli, "/suspended/", 50, 32)
	updateSchedule(t, ns, "cc", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(false) })
	top = revisionOf(t, cli)
	waitCapturing(t, ns, "cc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.CapturedRevision >= top })
	checkCapture(t, store, prefix, id, base.Revision+1, top)

	// etcd compacts what the stopped capture needs next: a new full backup, continued.
	suspendCapture(t, ns, "cc")
	snapshottest.Put(t, cli, "/lost/", 30, 32)
	compacted := revisionOf(t, cli)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Compact(ctx, compacted); err != nil {
		t.Fatal(err)
	}
	// A new request window, so that the capture's backup request is a new EtcdBackup.
	advance(t, ns, "cc", clock.Now().Add(backupRequestWindow))
	updateSchedule(t, ns, "cc", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(false) })
	s = waitCapturing(t, ns, "cc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.StartRevision > compacted })
	second := newestBackup(t, store, prefix, id)
	if second.Revision < compacted || s.Status.Capture.StartRevision != second.Revision+1 || s.Status.Capture.LastBackupRequest == first.Status.Capture.LastBackupRequest {
		t.Fatalf("after compaction at %d: status.capture = %+v, newest backup %s; want a new requested backup after the compaction, continued", compacted, s.Status.Capture, second.Key)
	}
	snapshottest.Put(t, cli, "/after/", 20, 32)
	top = revisionOf(t, cli)
	waitCapturing(t, ns, "cc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.CapturedRevision >= top })
	checkCapture(t, store, prefix, id, second.Revision+1, top)

	// Retention keeps one backup, the second: the segments of the first capture go.
	testutil.Eventually(t, 20*time.Second, "the first capture's segments pruned", func() (bool, string) {
		segs, err := capture.ListSegments(t.Context(), store, prefix, id)
		if err != nil {
			return false, err.Error()
		}
		for _, o := range segs {
			if o.Last <= second.Revision {
				return false, fmt.Sprintf("segment %d-%d is still there (backup kept at %d)", o.First, o.Last, second.Revision)
			}
		}
		return len(segs) > 0, fmt.Sprintf("%d segments", len(segs))
	})
	checkCapture(t, store, prefix, id, second.Revision+1, top)
	if r, err := capture.Resolve(t.Context(), store, prefix, id, second.Revision, capture.Target{}); err != nil || r.Revision != top {
		t.Fatalf("Resolve from the kept backup = %+v, %v; want revision %d", r, err, top)
	}
}

// suspendCapture suspends the schedule and waits until its capture stopped.
func suspendCapture(t *testing.T, ns, name string) {
	t.Helper()
	updateSchedule(t, ns, name, func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(true) })
	testutil.Eventually(t, 10*time.Second, "Capturing False while suspended", func() (bool, string) {
		s := getSchedule(t, ns, name)
		return capturing(s) == "False/"+etcdv1beta2.ReasonScheduleSuspended, capturing(s)
	})
}

// waitCapturing pokes the schedule until it is Capturing and ok accepts its status.capture.
func waitCapturing(t *testing.T, ns, name string, ok func(*etcdv1beta2.CaptureStatus) bool) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	var s *etcdv1beta2.EtcdBackupSchedule
	testutil.Eventually(t, 60*time.Second, "the capture of "+name, func() (bool, string) {
		poke(t, ns, name)
		s = getSchedule(t, ns, name)
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing)
		state := fmt.Sprintf("%s %+v active=%v", capturing(s), s.Status.Capture, s.Status.Active)
		if c != nil {
			state += " " + c.Message
		}
		return capturing(s) == "True/"+etcdv1beta2.ReasonCapturing && s.Status.Capture != nil && ok(s.Status.Capture), state
	})
	return s
}

// newestBackup is the newest backup of id under prefix.
func newestBackup(t *testing.T, store *storage.Store, prefix string, id snapshot.Identity) retention.Backup {
	t.Helper()
	infos, err := store.List(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _, ok := retention.Newest(prefix, infos, time.Now(), "", func(x snapshot.Identity) bool { return x == id })
	if !ok {
		t.Fatalf("no backup of %s under %s", id.Describe(), prefix)
	}
	return b
}

// checkCapture asserts that the segments hold every revision from..to exactly once.
func checkCapture(t *testing.T, store *storage.Store, prefix string, id snapshot.Identity, from, to int64) {
	t.Helper()
	rep, err := capture.Check(t.Context(), store, prefix, id, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("capture of revisions %d-%d: %+v", from, to, rep)
	}
}

// revisionOf is the etcd cluster's current revision.
func revisionOf(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// clusterIDOf is the cluster ID the member at endpoint reports.
func clusterIDOf(t *testing.T, cli *clientv3.Client, endpoint string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Status(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.ClusterId
}
