package etcdbackupschedule

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

func TestDrillName(t *testing.T) {
	at := time.Date(2026, 3, 29, 4, 0, 0, 0, time.UTC)
	minutes := fmt.Sprint(at.Unix() / 60)
	for _, tc := range []struct{ schedule, want string }{
		{"nightly", "nightly-drill-" + minutes},
		{"a-twenty-five-char-name-x", "a-twenty-five-char-name-x-drill-" + minutes},
		{"a-twenty-six-char-name-xyz", ""},
		{"prod.etcd.nightly", ""},
		{"0nightly", ""},
		{strings.Repeat("long-", 50), ""},
	} {
		got := DrillName(tc.schedule, at)
		if tc.want != "" && got != tc.want {
			t.Errorf("DrillName(%q) = %q, want %q", tc.schedule, got, tc.want)
		}
		if errs := validation.IsDNS1035Label(got); len(errs) > 0 || len(got) > maxDrillName || !strings.HasSuffix(got, "-drill-"+minutes) {
			t.Errorf("DrillName(%q) = %q (%d chars): %v", tc.schedule, got, len(got), errs)
		}
		if errs := validation.IsDNS1035Label(got + "-client"); len(errs) > 0 {
			t.Errorf("client Service of %q: %v", got, errs)
		}
	}
	if a, b := DrillName(strings.Repeat("x", 30)+"a", at), DrillName(strings.Repeat("x", 30)+"b", at); a == b {
		t.Errorf("shortened names collide: %s", a)
	}
}

func drillPassed(s *etcdv1beta2.EtcdBackupSchedule) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "none"
}

func restores(t *testing.T, ns string) map[string]*etcdv1beta2.EtcdRestore {
	t.Helper()
	l := &etcdv1beta2.EtcdRestoreList{}
	if err := k8s.List(t.Context(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	m := map[string]*etcdv1beta2.EtcdRestore{}
	for i := range l.Items {
		m[l.Items[i].Name] = &l.Items[i]
	}
	return m
}

func backupExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &etcdv1beta2.EtcdBackup{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// finishDrill writes what the restore operator writes when a drill ends: Complete (with a
// passed verification of keys) or Failed with reason, and optionally clusterDeletedTime.
func finishDrill(t *testing.T, ns, name string, keys int64, failReason string, clusterDeleted bool) {
	t.Helper()
	rs := &etcdv1beta2.EtcdRestore{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, rs); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(clock.Now())
	st := &rs.Status
	st.StartTime = &metav1.Time{Time: now.Add(-42 * time.Second)}
	st.CompletionTime = &now
	st.Duration = &metav1.Duration{Duration: 42 * time.Second}
	st.BackupAge = &metav1.Duration{Duration: 31 * time.Minute}
	st.BackupLocation = "S3://bucket/" + name
	if failReason == "" {
		st.Succeeded, st.Phase = true, etcdv1beta2.RestorePhaseSucceeded
		st.Verification = &etcdv1beta2.RestoreVerification{Revision: 7, Keys: keys, Hash: 1234, MembersVerified: 3, Passed: true}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: etcdv1beta2.RestoreConditionComplete, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonRestoreSucceeded, Message: "ok"})
	} else {
		st.Phase, st.Reason = etcdv1beta2.RestorePhaseFailed, "sha256 mismatch in the stored object"
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: etcdv1beta2.RestoreConditionFailed, Status: metav1.ConditionTrue, Reason: failReason, Message: st.Reason})
	}
	if clusterDeleted {
		st.ClusterDeletedTime = &now
	}
	if err := k8s.Status().Update(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
}

func hasEvent(t *testing.T, ns, reason, contains string) bool {
	t.Helper()
	l := &corev1.EventList{}
	if err := k8s.List(t.Context(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "EtcdBackupSchedule" && strings.Contains(e.Message, contains) {
			return true
		}
	}
	return false
}

// TestScheduledDrill drives an hourly backup schedule with an hourly restore drill half an hour
// earlier on the fake clock, against a real etcd and MinIO for the backups; the restore operator does
// not run here, so the test writes the drills' outcome the way it would. A drill due before any
// backup succeeded waits and starts once one has; it restores the newest successful backup into
// a scratch cluster named after the run, owned by the schedule; no second drill starts while one
// runs and the backup it reads survives the backup history limit; the skipped run is made up
// once it finished; lastDrill, DrillPassed and events follow a passed and a failed drill; the
// oldest finished drill beyond historyLimit is deleted once its scratch cluster is gone.
func TestScheduledDrill(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/drill/", 100, 16)
	ns := namespace(t)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	// Hourly drills, each 30 minutes before an hourly backup, so the first drill is due before
	// any backup. The clock starts at the wall time: the first pass makes up no earlier run.
	now := time.Now()
	clock.Set(now)
	d1 := now.Truncate(time.Minute).Add(2 * time.Minute)
	b1 := d1.Add(30 * time.Minute)
	s := newSchedule(ns, "db", fmt.Sprintf("%d * * * *", b1.Minute()), []string{e.Endpoint}, bucket, "aws")
	s.Spec.SuccessfulBackupsHistoryLimit = ptr.To[int32](1)
	s.Spec.RestoreDrill = &etcdv1beta2.RestoreDrillSpec{
		Schedule: fmt.Sprintf("%d * * * *", d1.Minute()), ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "prod"},
		TTLSecondsAfterFinished: ptr.To[int32](60), HistoryLimit: ptr.To[int32](2),
	}
	createSchedule(t, s)
	testutil.Eventually(t, 10*time.Second, "nextDrillTime", func() (bool, string) {
		s = getSchedule(t, ns, "db")
		return s.Status.NextDrillTime != nil && s.Status.NextDrillTime.Time.Equal(d1) && drillPassed(s) == "none", fmt.Sprintf("%v %s", s.Status.NextDrillTime, drillPassed(s))
	})

	// Due, but no backup yet: nothing is created.
	advance(t, ns, "db", d1.Add(10*time.Second))
	testutil.Eventually(t, 10*time.Second, "nextDrillTime after the first drill run", func() (bool, string) {
		s = getSchedule(t, ns, "db")
		return s.Status.NextDrillTime.Time.Equal(d1.Add(time.Hour)), s.Status.NextDrillTime.String()
	})
	testutil.Consistently(t, time.Second, "no drill without a successful backup", func() (bool, string) {
		rs, s := restores(t, ns), getSchedule(t, ns, "db")
		return len(rs) == 0 && s.Status.LastDrillTime == nil, fmt.Sprintf("restores %v, lastDrillTime %v", rs, s.Status.LastDrillTime)
	})

	// The first backup succeeds: the missed drill starts on it.
	advance(t, ns, "db", b1.Add(10*time.Second))
	name1 := DrillName("db", d1)
	testutil.Eventually(t, 30*time.Second, "drill "+name1, func() (bool, string) {
		_, ok := restores(t, ns)[name1]
		s = getSchedule(t, ns, "db")
		return ok, fmt.Sprintf("lastSuccessfulBackup %q, restores %v", s.Status.LastSuccessfulBackup, restores(t, ns))
	})
	rs := restores(t, ns)[name1]
	if rs.Spec.EtcdCluster.Name != name1 || rs.Spec.ClusterTemplate == nil || rs.Spec.ClusterTemplate.Name != "prod" ||
		rs.Spec.BackupRef == nil || rs.Spec.BackupRef.Name != BackupName("db", b1) || ptr.Deref(rs.Spec.TTLSecondsAfterFinished, 0) != 60 ||
		rs.Labels[DrillLabel] != "db" || !metav1.IsControlledBy(rs, s) {
		t.Fatalf("drill EtcdRestore: %+v %+v %+v", rs.Spec, rs.Labels, rs.OwnerReferences)
	}
	testutil.Eventually(t, 10*time.Second, "DrillPassed Unknown while the first drill runs", func() (bool, string) {
		s = getSchedule(t, ns, "db")
		return drillPassed(s) == "Unknown/"+etcdv1beta2.ReasonRestoring && s.Status.LastDrillTime.Time.Equal(d1), drillPassed(s)
	})

	// The next drill is due while the first runs: skipped. The next backup completes; history
	// limit 1 would delete the first backup, but the running drill reads it.
	d2, b2 := d1.Add(time.Hour), b1.Add(time.Hour)
	advance(t, ns, "db", d2.Add(10*time.Second))
	advance(t, ns, "db", b2.Add(10*time.Second))
	testutil.Eventually(t, 30*time.Second, "backup "+BackupName("db", b2), func() (bool, string) {
		s = getSchedule(t, ns, "db")
		return s.Status.LastSuccessfulBackup == BackupName("db", b2), s.Status.LastSuccessfulBackup
	})
	testutil.Consistently(t, time.Second, "no second drill while the first runs", func() (bool, string) {
		_, ok := restores(t, ns)[DrillName("db", d2)]
		return !ok, "a second drill started"
	})
	if !backupExists(t, ns, BackupName("db", b1)) {
		t.Fatal("the history limit deleted the backup a running drill restores")
	}

	// The first drill passes: recorded, the skipped run is made up on the newest backup, and
	// the first backup is no longer protected.
	finishDrill(t, ns, name1, 100, "", false)
	name2 := DrillName("db", d2)
	testutil.Eventually(t, 10*time.Second, "lastDrill passed and the skipped drill made up", func() (bool, string) {
		s = getSchedule(t, ns, "db")
		_, ok := restores(t, ns)[name2]
		ld := s.Status.LastDrill
		return ok && ld != nil && ld.Restore == name1 && ld.Passed && ld.Keys == 100 && ld.TimeToRestore.Duration == 42*time.Second &&
			ld.BackupAge.Duration == 31*time.Minute && ld.Backup == "S3://bucket/"+name1 && ld.Reason == "" &&
			drillPassed(s) == "True/"+etcdv1beta2.ReasonDrillPassed, fmt.Sprintf("%s %+v made-up=%t", drillPassed(s), ld, ok)
	})
	if rs := restores(t, ns)[name2]; rs.Spec.BackupRef.Name != BackupName("db", b2) {
		t.Fatalf("made-up drill restores %s, want the newest backup %s", rs.Spec.BackupRef.Name, BackupName("db", b2))
	}
	testutil.Eventually(t, 10*time.Second, "first backup deleted by the history limit", func() (bool, string) {
		return !backupExists(t, ns, BackupName("db", b1)), "still there"
	})
	testutil.Eventually(t, 10*time.Second, "DrillPassed event", func() (bool, string) {
		return hasEvent(t, ns, etcdv1beta2.ReasonDrillPassed, name1), "no event"
	})

	// The second drill fails.
	finishDrill(t, ns, name2, 0, etcdv1beta2.ReasonBackupCorrupt, false)
	testutil.Eventually(t, 10*time.Second, "lastDrill failed", func() (bool, string) {
		s = getSchedule(t, ns, "db")
		ld := s.Status.LastDrill
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed)
		return ld != nil && ld.Restore == name2 && !ld.Passed && ld.Reason == etcdv1beta2.ReasonBackupCorrupt && c != nil &&
				c.Status == metav1.ConditionFalse && c.Reason == etcdv1beta2.ReasonDrillFailed && strings.Contains(c.Message, etcdv1beta2.ReasonBackupCorrupt),
			fmt.Sprintf("%+v %+v", ld, c)
	})
	testutil.Eventually(t, 10*time.Second, "DrillFailed event", func() (bool, string) {
		return hasEvent(t, ns, etcdv1beta2.ReasonDrillFailed, "sha256 mismatch"), "no event"
	})

	// A third drill passes: three finished drills, history limit 2. The oldest is deleted only
	// once its scratch cluster is gone.
	d3 := d2.Add(time.Hour)
	advance(t, ns, "db", d3.Add(10*time.Second))
	name3 := DrillName("db", d3)
	testutil.Eventually(t, 10*time.Second, "drill "+name3, func() (bool, string) {
		_, ok := restores(t, ns)[name3]
		return ok, fmt.Sprint(restores(t, ns))
	})
	finishDrill(t, ns, name3, 100, "", true)
	testutil.Eventually(t, 10*time.Second, "lastDrill "+name3, func() (bool, string) {
		s = getSchedule(t, ns, "db")
		return s.Status.LastDrill.Restore == name3 && drillPassed(s) == "True/"+etcdv1beta2.ReasonDrillPassed, drillPassed(s)
	})
	testutil.Consistently(t, time.Second, "the oldest drill kept while its scratch cluster may exist", func() (bool, string) {
		_, ok := restores(t, ns)[name1]
		return ok, "the oldest drill was deleted before its scratch cluster"
	})
	finishDrill(t, ns, name1, 100, "", true)
	testutil.Eventually(t, 10*time.Second, "history limit 2", func() (bool, string) {
		rs := restores(t, ns)
		_, old := rs[name1]
		_, ok2 := rs[name2]
		_, ok3 := rs[name3]
		return !old && ok2 && ok3, fmt.Sprint(rs)
	})
}

// TestDrillInvalid: a drill schedule that passes admission but never fires (30 February) gives
// DrillPassed False with a clear reason and a Warning event, while backups stay scheduled;
// fixing the drill schedule schedules drills again. (A drill without a cluster to copy, which
// the controller reports as TemplateNotFound, is refused at admission now: test/crdvalidation.)
func TestDrillInvalid(t *testing.T) {
	ns := namespace(t)
	clockBetweenRuns(time.Hour)
	bad := newSchedule(ns, "bad-drill", "0 * * * *", []string{"http://127.0.0.1:1"}, nil, "")
	bad.Spec.StartingDeadlineSeconds = ptr.To[int64](60) // no run made up: see clockBetweenRuns
	bad.Spec.RestoreDrill = &etcdv1beta2.RestoreDrillSpec{Schedule: "0 0 30 2 *", ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "prod"}}
	createSchedule(t, bad)
	for name, reason := range map[string]string{"bad-drill": etcdv1beta2.ReasonInvalidSchedule} {
		testutil.Eventually(t, 10*time.Second, name+" "+reason, func() (bool, string) {
			s := getSchedule(t, ns, name)
			return drillPassed(s) == "False/"+reason && s.Status.NextDrillTime == nil && readyReason(s) == "True/AsExpected" && s.Status.NextScheduleTime != nil,
				drillPassed(s) + " " + readyReason(s)
		})
		testutil.Eventually(t, 10*time.Second, name+" Warning event", func() (bool, string) {
			return hasEvent(t, ns, reason, "restoreDrill"), "no event"
		})
	}
	s := getSchedule(t, ns, "bad-drill")
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed); !strings.Contains(c.Message, "restoreDrill.schedule") || !strings.Contains(c.Message, "never fires") {
		t.Fatalf("message does not name the field: %q", c.Message)
	}
	// Read again on a conflict: the controller's status writes since may have made the copy
	// above stale (seen in a CI rehearsal).
	updateSchedule(t, ns, "bad-drill", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.RestoreDrill.Schedule = "0 4 * * 0" })
	testutil.Eventually(t, 10*time.Second, "drills scheduled after the fix", func() (bool, string) {
		s = getSchedule(t, ns, "bad-drill")
		return drillPassed(s) == "none" && s.Status.NextDrillTime != nil && s.Status.NextDrillTime.Weekday() == time.Sunday, drillPassed(s)
	})
	if rs := restores(t, ns); len(rs) != 0 {
		t.Fatalf("drills created: %v", rs)
	}
}
