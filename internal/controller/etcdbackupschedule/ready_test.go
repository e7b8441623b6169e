package etcdbackupschedule

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// kstatus reads Ready, Reconciling and Stalled as "Ready=False/Reason Reconciling=<none> ...",
// or says why it cannot be trusted yet: status.observedGeneration, or one of them, is not of
// the schedule's generation.
func kstatus(s *etcdv1beta2.EtcdBackupSchedule) string {
	if s.Status.ObservedGeneration != s.Generation {
		return fmt.Sprintf("status.observedGeneration %d, generation %d", s.Status.ObservedGeneration, s.Generation)
	}
	out := ""
	for _, typ := range []string{etcdv1beta2.ConditionReady, etcdv1beta2.ConditionReconciling, etcdv1beta2.ConditionStalled} {
		got := "<none>"
		if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
			if c.ObservedGeneration != s.Generation {
				return fmt.Sprintf("%s is of generation %d, the schedule's is %d", typ, c.ObservedGeneration, s.Generation)
			}
			got = string(c.Status) + "/" + c.Reason
		}
		out += fmt.Sprintf(" %s=%s", typ, got)
	}
	return out[1:]
}

func waitKstatus(t *testing.T, ns, name, want string) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	var s *etcdv1beta2.EtcdBackupSchedule
	testutil.Eventually(t, 30*time.Second, name+" "+want, func() (bool, string) {
		s = getSchedule(t, ns, name)
		got := kstatus(s)
		return got == want, got
	})
	return s
}

func updateSchedule(t *testing.T, ns, name string, change func(s *etcdv1beta2.EtcdBackupSchedule)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getSchedule(t, ns, name)
		change(s)
		return k8s.Update(t.Context(), s)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestReadyCondition: a schedule is Ready while it runs and its newest finished backup did not
// fail; Stalled with BackupFailed after a failed run until a run succeeds; not Ready but neither
// Stalled nor Reconciling while suspended; Stalled with InvalidSchedule when it cannot parse.
// status.observedGeneration follows every spec change, suspended or not.
func TestReadyCondition(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	ns := namespace(t)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	clockBetweenRuns(time.Hour)
	s := newSchedule(ns, "ready", "0 * * * *", nil, bucket, "aws")
	s.Spec.BackupTemplate.Spec.EtcdCluster = &etcdv1beta2.EtcdClusterRef{Name: "nope"}
	// Other tests moved the fake clock ahead of the real one, in which the schedule is created:
	// runs between the creation and the clock would be made up at once (and fail, before the
	// test saw Ready). A starting deadline skips them (the clock is half an hour past the last
	// of them); the runs the test makes are 10 s late.
	s.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
	createSchedule(t, s)
	s = waitKstatus(t, ns, "ready", "Ready=True/AsExpected Reconciling=<none> Stalled=<none>")

	if n := len(backups(t, ns)); n != 0 {
		t.Fatalf("%d backups made up at creation: the premise of this test is a schedule with no run yet", n)
	}
	run := s.Status.NextScheduleTime.Time
	advance(t, ns, "ready", run.Add(10*time.Second))
	s = waitKstatus(t, ns, "ready", "Ready=False/BackupFailed Reconciling=<none> Stalled=True/BackupFailed")
	if msg := meta.FindStatusCondition(s.Status.Conditions, "Ready").Message; msg == "" {
		t.Error("BackupFailed without a message")
	}

	updateSchedule(t, ns, "ready", func(s *etcdv1beta2.EtcdBackupSchedule) {
		s.Spec.BackupTemplate.Spec.EtcdCluster, s.Spec.BackupTemplate.Spec.EtcdEndpoints = nil, []string{e.Endpoint}
	})
	poke(t, ns, "ready")
	s = waitKstatus(t, ns, "ready", "Ready=False/BackupFailed Reconciling=<none> Stalled=True/BackupFailed")
	advance(t, ns, "ready", s.Status.NextScheduleTime.Add(10*time.Second))
	waitKstatus(t, ns, "ready", "Ready=True/AsExpected Reconciling=<none> Stalled=<none>")

	updateSchedule(t, ns, "ready", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(true) })
	waitKstatus(t, ns, "ready", "Ready=False/Suspended Reconciling=<none> Stalled=<none>")

	createSchedule(t, newSchedule(ns, "invalid", "0 0 31 2 *", []string{e.Endpoint}, bucket, "aws")) // passes admission, never fires
	waitKstatus(t, ns, "invalid", "Ready=False/InvalidSchedule Reconciling=<none> Stalled=True/InvalidSchedule")
}
