package etcdbackupschedule

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

func newSchedule(ns, name, expr string, endpoints []string, bucket *storagetest.Bucket, secret string) *etcdv1beta2.EtcdBackupSchedule {
	src := etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/etcd.backup"}}
	storage := etcdv1beta2.BackupStorageTypeS3
	if bucket != nil {
		src, storage = bucket.Source("sched/etcd.backup", secret), bucket.Type
	}
	return &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: expr,
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{
				Metadata: etcdv1beta2.BackupTemplateMetadata{Labels: map[string]string{"team": "db"}},
				Spec:     etcdv1beta2.BackupSpec{EtcdEndpoints: endpoints, StorageType: storage, BackupSource: src},
			},
		},
	}
}

func readyReason(s *etcdv1beta2.EtcdBackupSchedule) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionReady); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "none"
}

// TestScheduleRunsHistoryRetention drives an hourly schedule through five runs with the fake
// clock against a real etcd and MinIO: each run creates one deterministically named, owned
// EtcdBackup that the backup controller completes; history keeps 2 EtcdBackups, retention 3
// objects; a 5 h outage makes up only the newest run; editing the schedule takes effect.
func TestScheduleRunsHistoryRetention(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	ns := namespace(t)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.Now())
	s := newSchedule(ns, "hourly", "0 * * * *", []string{e.Endpoint}, bucket, "aws")
	s.Spec.SuccessfulBackupsHistoryLimit = ptr.To[int32](2)
	s.Spec.Retention = &etcdv1beta2.RetentionPolicy{MaxBackups: ptr.To[int32](3)}
	createSchedule(t, s)

	testutil.Eventually(t, 10*time.Second, "Ready and nextScheduleTime", func() (bool, string) {
		s = getSchedule(t, ns, "hourly")
		return s.Status.NextScheduleTime != nil && readyReason(s) == "True/AsExpected", readyReason(s)
	})
	if n := len(backups(t, ns)); n != 0 {
		t.Fatalf("%d backups before the first run", n)
	}
	fresh := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionBackupFresh)
	if fresh == nil || fresh.Reason != etcdv1beta2.ReasonNoSuccessfulBackup {
		t.Fatalf("BackupFresh = %+v", fresh)
	}

	var runs []time.Time
	for i := range 5 {
		snapshottest.Put(t, cli, fmt.Sprintf("/run%d/", i), 3, 16)
		run := s.Status.NextScheduleTime.Time
		runs = append(runs, run)
		advance(t, ns, "hourly", run.Add(10*time.Second))
		name := BackupName("hourly", run)
		testutil.Eventually(t, 30*time.Second, "run "+name+" to complete", func() (bool, string) {
			s = getSchedule(t, ns, "hourly")
			state := fmt.Sprintf("last=%q active=%v status=%+v", s.Status.LastSuccessfulBackup, s.Status.Active, s.Status)
			for _, b := range backups(t, ns) {
				state += fmt.Sprintf("\n%s: %s %s", b.Name, b.Status.Phase, b.Status.Reason)
			}
			return s.Status.LastSuccessfulBackup == name && s.Status.NextScheduleTime.After(run), state
		})
		b := &etcdv1beta2.EtcdBackup{}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, b); err == nil {
			if !metav1.IsControlledBy(b, s) || b.Labels["team"] != "db" || b.Spec.PathType != etcdv1beta2.BackupPathPrefix {
				t.Fatalf("backup %s: owner/labels/pathType wrong: %+v %+v", name, b.OwnerReferences, b.Labels)
			}
		}
	}
	if !s.Status.LastScheduleTime.Equal(&metav1.Time{Time: runs[4]}) || !meta.IsStatusConditionTrue(s.Status.Conditions, etcdv1beta2.ScheduleConditionBackupFresh) {
		t.Fatalf("status after 5 runs: %+v", s.Status)
	}

	// History: 2 EtcdBackups left, the newest two.
	testutil.Eventually(t, 10*time.Second, "history limit 2", func() (bool, string) {
		bs := backups(t, ns)
		names := []string{}
		for _, b := range bs {
			names = append(names, b.Name)
		}
		return len(bs) == 2, fmt.Sprint(names)
	})
	for _, run := range runs[3:] {
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: BackupName("hourly", run)}, &etcdv1beta2.EtcdBackup{}); err != nil {
			t.Fatalf("newest backups must be kept: %v", err)
		}
	}
	// Retention: 3 objects in the bucket, the newest being the status location.
	store, err := (&Reconciler{Client: k8s, Options: options.New("backup-operator")}).openTemplateStore(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testutil.Eventually(t, 10*time.Second, "retention to keep 3 objects", func() (bool, string) {
		infos, err := store.List(t.Context(), "sched/")
		if err != nil {
			return false, err.Error()
		}
		kept := retention.Parse("sched/etcd.backup", infos)
		_, _, newest, _ := storage.ParseURL(getSchedule(t, ns, "hourly").Status.LastSuccessfulLocation)
		return len(infos) == 3 && len(kept) == 3 && kept[0].Key == newest, fmt.Sprint(infos)
	})

	// A 5 h outage: only the most recent missed run is made up.
	last := runs[4]
	advance(t, ns, "hourly", last.Add(5*time.Hour+20*time.Minute))
	newest := last.Add(5 * time.Hour)
	testutil.Eventually(t, 30*time.Second, "the newest missed run", func() (bool, string) {
		s = getSchedule(t, ns, "hourly")
		return s.Status.LastSuccessfulBackup == BackupName("hourly", newest), s.Status.LastSuccessfulBackup
	})
	for h := 1; h < 5; h++ {
		err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: BackupName("hourly", last.Add(time.Duration(h)*time.Hour))}, &etcdv1beta2.EtcdBackup{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("missed run %d was made up: %v", h, err)
		}
	}

	// Editing the schedule takes effect on the next pass.
	updateSchedule(t, ns, "hourly", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Schedule = "*/15 * * * *" })
	now := clock.Now()
	want := now.Truncate(15 * time.Minute).Add(15 * time.Minute)
	testutil.Eventually(t, 10*time.Second, "nextScheduleTime of the edited schedule", func() (bool, string) {
		s = getSchedule(t, ns, "hourly")
		return s.Status.NextScheduleTime.Time.Equal(want), s.Status.NextScheduleTime.String()
	})
}

// TestScheduleInvalid: a schedule that passes admission but never fires (31 February) or a time
// zone that passes admission but not the parser gives Ready=False with the reason, no backups,
// and no requeue (a never-firing schedule used to report its next run at 0001-01-01 and requeue
// after 1 s forever).
func TestScheduleInvalid(t *testing.T) {
	ns := namespace(t)
	bad := newSchedule(ns, "bad-expr", "0 0 31 2 *", []string{"http://127.0.0.1:1"}, nil, "")
	createSchedule(t, bad)
	badTZ := newSchedule(ns, "bad-tz", "0 * * * *", []string{"http://127.0.0.1:1"}, nil, "")
	badTZ.Spec.TimeZone = ptr.To("Mars/Olympus_Mons")
	createSchedule(t, badTZ)
	for name, reason := range map[string]string{"bad-expr": etcdv1beta2.ReasonInvalidSchedule, "bad-tz": etcdv1beta2.ReasonInvalidTimeZone} {
		testutil.Eventually(t, 10*time.Second, name+" "+reason, func() (bool, string) {
			s := getSchedule(t, ns, name)
			return readyReason(s) == "False/"+reason && s.Status.NextScheduleTime == nil, readyReason(s)
		})
	}
	advance(t, ns, "bad-expr", clock.Now().Add(2*time.Hour))
	advance(t, ns, "bad-tz", clock.Now())
	testutil.Consistently(t, time.Second, "no backups from invalid schedules", noBackups(t, ns))
}

// TestScheduleSuspend: no runs while suspended, and runs missed meanwhile are not made up.
func TestScheduleSuspend(t *testing.T) {
	ns := namespace(t)
	if now := time.Now(); now.After(clock.Now()) {
		clock.Set(now)
	}
	s := newSchedule(ns, "paused", "0 * * * *", []string{"http://127.0.0.1:1"}, nil, "")
	s.Spec.Suspend = ptr.To(true)
	createSchedule(t, s)
	testutil.Eventually(t, 10*time.Second, "Suspended", func() (bool, string) {
		s = getSchedule(t, ns, "paused")
		return readyReason(s) == "False/"+etcdv1beta2.ReasonScheduleSuspended, readyReason(s)
	})
	advance(t, ns, "paused", clock.Now().Add(3*time.Hour))
	testutil.Consistently(t, time.Second, "no backups from a suspended schedule", noBackups(t, ns))
	updateSchedule(t, ns, "paused", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(false) })
	testutil.Eventually(t, 10*time.Second, "Ready after resume", func() (bool, string) {
		s = getSchedule(t, ns, "paused")
		return readyReason(s) == "True/AsExpected" && s.Status.NextScheduleTime != nil, readyReason(s)
	})
	if n := len(backups(t, ns)); n != 0 || s.Status.LastScheduleTime != nil {
		t.Fatalf("runs missed while suspended were made up: %d backups", n)
	}
	next := s.Status.NextScheduleTime.Time
	advance(t, ns, "paused", next.Add(time.Second))
	testutil.Eventually(t, 10*time.Second, "the first run after resume", func() (bool, string) {
		err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: BackupName("paused", next)}, &etcdv1beta2.EtcdBackup{})
		return err == nil, fmt.Sprint(err)
	})
}
