package kubectletcd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestDrillNow runs `drill now` while the test plays the restore operator: the command creates
// the EtcdRestore the backup operator would create for a drill at this minute (the schedule's
// newest successful backup into a scratch cluster of the drill's name, the drill's template
// and TTL, the drill label, the schedule as controller), follows it, and reports the outcome:
// PASSED with the time to restore and exit 0, or FAILED with the reason and exit 1; -o json
// prints the outcome as status.lastDrill records it; a drill deleted before it finished is an
// error saying so.
func TestDrillNow(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC)
	passed := etcdv1beta2.RestoreStatus{
		Phase: etcdv1beta2.RestorePhaseSucceeded, Succeeded: true, BackupLocation: "S3://bucket/main_1",
		Duration: &metav1.Duration{Duration: 95 * time.Second}, BackupAge: &metav1.Duration{Duration: time.Hour},
		Verification: &etcdv1beta2.RestoreVerification{Keys: 1200, Passed: true, MembersVerified: 3},
		Conditions:   []metav1.Condition{{Type: etcdv1beta2.RestoreConditionComplete, Status: metav1.ConditionTrue, Reason: "Verified", Message: "verified", LastTransitionTime: metav1.Time{Time: now}}},
	}
	captured := *passed.DeepCopy()
	captured.StartTime = &metav1.Time{Time: now}
	captured.PointInTime = &etcdv1beta2.RestoredPoint{Revision: 900, Revisions: 400, Time: &metav1.Time{Time: now.Add(-3 * time.Second)}}
	failed := etcdv1beta2.RestoreStatus{
		Phase: etcdv1beta2.RestorePhaseFailed, Reason: "SeedFailed", BackupLocation: "S3://bucket/main_1",
		Conditions: []metav1.Condition{{Type: etcdv1beta2.RestoreConditionFailed, Status: metav1.ConditionTrue, Reason: "SeedFailed", Message: "etcdutl snapshot restore: checksum mismatch", LastTransitionTime: metav1.Time{Time: now}}},
	}
	for _, tc := range []struct {
		name     string
		status   etcdv1beta2.RestoreStatus
		deleted  bool // delete the drill instead of finishing it
		capture  bool // the schedule runs continuousCapture
		args     []string
		code     int
		contains []string
	}{
		{name: "passed", status: passed, code: 0, contains: []string{"phase Succeeded",
			"PASSED: S3://bucket/main_1 restored into scratch cluster nightly-drill-29929230, 1200 keys verified on every member", "time to restore (RTO) 1m35s, backup age 1h0m0s"}},
		{name: "failed", status: failed, code: 1, contains: []string{"phase Failed",
			"FAILED: SeedFailed: etcdutl snapshot restore: checksum mismatch", "kubectl describe etcdrestore nightly-drill-29929230"}},
		{name: "captured", status: captured, capture: true, code: 0, contains: []string{"time to restore (RTO) 1m35s, backup age 1h0m0s",
			"recovery point (RPO) 3s: 400 captured revisions replayed onto the backup, to revision 900"}},
		{name: "json", status: passed, args: []string{"-o", "json"}, code: 0},
		{name: "deleted", deleted: true, code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testutil.Namespace(t, k8s, "drill")
			newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
			s := newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{LastSuccessfulBackup: "nightly-1"})
			s.Spec.RestoreDrill = &etcdv1beta2.RestoreDrillSpec{Schedule: "0 4 * * 0", ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "drill-template"}, TTLSecondsAfterFinished: ptr.To[int32](120)}
			if tc.capture {
				s.Spec.ContinuousCapture = &etcdv1beta2.ContinuousCaptureSpec{}
			}
			if err := k8s.Update(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			newBackup(t, ns, "nightly-1", "main", etcdv1beta2.BackupPhaseCompleted)

			wait := start(t, now, ns, append([]string{"drill", "now", "main"}, tc.args...)...)

			rs := &etcdv1beta2.EtcdRestore{}
			name := etcdbackupschedule.DrillName("nightly", now)
			testutil.Eventually(t, testutil.Timeout, "the drill's EtcdRestore", testutil.NoError(func() error {
				return k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, rs)
			}))
			sp := rs.Spec
			if sp.EtcdCluster.Name != name || sp.ClusterTemplate == nil || sp.ClusterTemplate.Name != "drill-template" || sp.BackupRef == nil || sp.BackupRef.Name != "nightly-1" ||
				sp.TTLSecondsAfterFinished == nil || *sp.TTLSecondsAfterFinished != 120 || sp.BackupScheduleRef != nil {
				t.Errorf("spec %+v, want backup nightly-1 into scratch %s from template drill-template, TTL 120", sp, name)
			}
			if (sp.PointInTime != nil) != tc.capture || (tc.capture && (sp.PointInTime.Revision != 0 || sp.PointInTime.Time != nil)) {
				t.Errorf("spec.pointInTime %+v; want {} (the newest point captured) exactly when the schedule captures (%t)", sp.PointInTime, tc.capture)
			}
			if rs.Labels[etcdbackupschedule.DrillLabel] != "nightly" || !metav1.IsControlledBy(rs, s) ||
				rs.Annotations[etcdbackupschedule.ScheduledTimeAnnotation] != "2026-11-27T04:30:00Z" || rs.Annotations[ManualDrillAnnotation] != "true" {
				t.Errorf("labels %v, annotations %v, owners %v: want the drill label, the schedule as controller, the run's time", rs.Labels, rs.Annotations, rs.OwnerReferences)
			}
			if tc.deleted {
				if err := k8s.Delete(t.Context(), rs); err != nil {
					t.Fatal(err)
				}
			} else {
				rs.Status = tc.status
				if err := k8s.Status().Update(t.Context(), rs); err != nil {
					t.Fatal(err)
				}
			}
			r := wait()
			if r.code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tc.code, r.err)
			}
			if tc.deleted {
				mustContain(t, r.err, fmt.Sprintf("error: drill EtcdRestore %s/%s was deleted before it finished", ns, name))
			}
			created := fmt.Sprintf("drill %s/%s created: backup nightly-1 (S3://bucket/nightly-1) into scratch cluster %s (template drill-template), deleted 120s after the drill finishes", ns, name, name)
			if tc.name == "json" {
				mustContain(t, r.err, created)
				var got etcdv1beta2.DrillResult
				if err := json.Unmarshal([]byte(r.out), &got); err != nil {
					t.Fatalf("-o json output does not parse: %v\n%s", err, r.out)
				}
				if !got.Passed || got.Restore != name || got.Keys != 1200 || got.TimeToRestore == nil || got.TimeToRestore.Duration != 95*time.Second {
					t.Errorf("-o json: %+v, want passed, %s, 1200 keys, 1m35s", got, name)
				}
				return
			}
			mustContain(t, r.out, append(tc.contains, created)...)
		})
	}
}

// TestDrillNowRefuses: no drill is created while one of the schedule is in flight (the backup
// operator runs one at a time), nor without a successful backup to restore.
func TestDrillNowRefuses(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC)
	ns := testutil.Namespace(t, k8s, "drill")
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
	s := newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{})
	drills := func() int {
		var l etcdv1beta2.EtcdRestoreList
		if err := k8s.List(t.Context(), &l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}

	r := run(t.Context(), now, ns, "drill", "now", "main")
	if r.code != 1 || !strings.Contains(r.err, "has no successful backup yet") || drills() != 0 {
		t.Errorf("no backup: exit %d, stderr %q, %d restores; want 1 and none", r.code, r.err, drills())
	}

	newBackup(t, ns, "nightly-1", "main", etcdv1beta2.BackupPhaseCompleted)
	s.Status.LastSuccessfulBackup = "nightly-1"
	if err := k8s.Status().Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	r = run(t.Context(), now.Add(-time.Hour), ns, "drill", "now", "main", "--wait=false")
	if r.code != 0 {
		t.Fatalf("first drill: exit %d: %s", r.code, r.err)
	}
	r = run(t.Context(), now, ns, "drill", "now", "main")
	if r.code != 1 || !strings.Contains(r.err, "drill "+etcdbackupschedule.DrillName("nightly", now.Add(-time.Hour))+" of schedule "+ns+"/nightly has not finished") || drills() != 1 {
		t.Errorf("drill in flight: exit %d, stderr %q, %d restores; want 1 and one", r.code, r.err, drills())
	}
}

// newBackup creates EtcdBackup ns/name of cluster with the given phase (location
// S3://bucket/<name>).
func newBackup(t *testing.T, ns, name, cluster string, phase etcdv1beta2.BackupPhase) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.BackupSpec{
		EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: cluster}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: s3Source("bucket/" + name)}}
	if err := k8s.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	b.Status = etcdv1beta2.BackupStatus{Phase: phase, Location: "S3://bucket/" + name, EtcdRevision: 8000}
	if err := k8s.Status().Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	return b
}
