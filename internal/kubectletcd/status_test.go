package kubectletcd

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestStatus writes the statuses the operators would write for a degraded three-member cluster,
// its schedule (last success 5 minutes ago, a passed drill), an older one-shot backup and a
// schedule of another cluster, and checks the one screen `status` prints: phase, conditions,
// the leader and the failing member's error, the newest backup with RPO 5m (the schedule's,
// not the older backup's), the drill, the last recovery; nothing of the other cluster. With -o
// json and -o yaml it parses the same as a statusReport; another -o value is a usage error.
func TestStatus(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "status")
	now := time.Now().UTC().Truncate(time.Second)
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{
		Phase: etcdv1beta2.ClusterPhaseDegraded, Reason: "MemberUnhealthy",
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "MemberUnhealthy", Message: "1 of 3 members\nis unhealthy", LastTransitionTime: *ago(now, 10*time.Minute)},
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumHealthy", Message: "2 of 3 members serve", LastTransitionTime: *ago(now, 2*time.Hour)},
		},
		Size: 3, ReadyMembers: 2, CurrentVersion: "3.6.16", ClusterID: "8e9e05c52164694d", Leader: "main-1",
		Members: etcdv1beta2.MembersStatus{Outdated: []string{"main-0"}, Details: []etcdv1beta2.MemberStatus{
			{Name: "main-0", Role: etcdv1beta2.MemberRoleFollower, Version: "3.6.16", DBSize: 20 << 20, DBSizeInUse: 5 << 20, Healthy: true},
			{Name: "main-1", Role: etcdv1beta2.MemberRoleLeader, Version: "3.6.16", DBSize: 20 << 20, DBSizeInUse: 5 << 20, Healthy: true},
			{Name: "main-2", Role: etcdv1beta2.MemberRoleUnknown, Healthy: false, LastError: "context deadline exceeded"},
		}},
		DefragmentRequest: &etcdv1beta2.DefragmentRequestStatus{RequestedAt: "2026-11-27T17:00:00Z", State: etcdv1beta2.DefragmentRequestPending,
			Defragmented: []string{"main-0"}, Message: "waiting for every member\nto be healthy"},
		LastRecovery: &etcdv1beta2.RecoveryRecord{RestoreName: "main-recovery-1", QuorumLostAt: ago(now, 48*time.Hour), BackupTime: ago(now, 49*time.Hour), RPOSeconds: 3600, RPORevisions: 42},
	})
	newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{
		LastSuccessfulTime: ago(now, 5*time.Minute), LastSuccessfulBackup: "nightly-202611270100", LastSuccessfulLocation: "S3://bucket/main_20261127T010000Z_v1",
		NextScheduleTime: &metav1.Time{Time: now.Add(time.Hour)},
		Conditions:       []metav1.Condition{{Type: etcdv1beta2.ScheduleConditionBackupFresh, Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: *ago(now, time.Hour)}},
		LastDrill: &etcdv1beta2.DrillResult{Restore: "nightly-drill-1", Backup: "S3://bucket/main_x", Passed: true, CompletionTime: ago(now, 3*time.Hour),
			TimeToRestore: &metav1.Duration{Duration: 95 * time.Second}, Keys: 1200},
	})
	newSchedule(t, ns, "other-nightly", "other", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/other"), etcdv1beta2.BackupScheduleStatus{LastSuccessfulTime: ago(now, time.Minute)})
	old := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before-upgrade"}, Spec: etcdv1beta2.BackupSpec{
		EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "main"}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: s3Source("bucket/before-upgrade")}}
	if err := k8s.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	old.Status = etcdv1beta2.BackupStatus{Phase: etcdv1beta2.BackupPhaseCompleted, Succeeded: true, LastSuccessDate: ago(now, time.Hour), Location: "S3://bucket/before-upgrade"}
	if err := k8s.Status().Update(t.Context(), old); err != nil {
		t.Fatal(err)
	}

	r := run(t.Context(), now, ns, "status", "main")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	t.Log("\n" + r.out)
	mustContain(t, r.out,
		"Cluster:         "+ns+"/main",
		"Degraded (MemberUnhealthy)",
		"2 ready of 3 (spec size 3); 1 on an older pod spec, being rolled: main-0",
		"Leader:          main-1",
		"1 of 3 members is unhealthy",
		"Newest:    nightly-202611270100 (schedule/nightly)",
		"S3://bucket/main_20261127T010000Z_v1",
		"RPO:       5m",
		"nightly:  PASSED 3h ago (restore nightly-drill-1",
		"time to restore 1m35s",
		"restore main-recovery-1",
		"lost at most 3600s and at least 42 revisions",
		"Defrag:          Pending, 1 of 3 members done (requested 2026-11-27T17:00:00Z): waiting for every member to be healthy",
	)
	mustContain(t, r.out, "main-1 Leader 3.6.16 20.0 MiB 5.0 MiB true", "main-0 Follower (outdated)", "Ready False MemberUnhealthy 10m")
	if l := line(r.out, "main-2"); !strings.Contains(l, "false") || !strings.Contains(l, "context deadline exceeded") {
		t.Errorf("main-2's row = %q, want unhealthy with its last error", l)
	}
	if strings.Contains(r.out, "other-nightly") {
		t.Errorf("the schedule of another cluster is shown:\n%s", r.out)
	}

	// -o json and -o yaml: the same screen as one object on stdout, nothing on stderr.
	for _, format := range []string{"json", "yaml"} {
		r := run(t.Context(), now, ns, "status", "main", "-o", format)
		if r.code != 0 || r.err != "" {
			t.Fatalf("-o %s: exit %d, stderr %q", format, r.code, r.err)
		}
		t.Log("\n" + r.out)
		var rep statusReport
		if err := decode(format, r.out, &rep); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, r.out)
		}
		checkStatusReport(t, format, ns, &rep)
	}
	if r := run(t.Context(), now, ns, "status", "main", "-o", "wide"); r.code != 2 || !strings.Contains(r.err, `status: -o "wide": want json or yaml`) || r.out != "" {
		t.Errorf("status -o wide: exit %d, stdout %q, stderr %q; want 2 and the usage error", r.code, r.out, r.err)
	}

	if r := run(t.Context(), now, ns, "status", "missing"); r.code != 1 || !strings.Contains(r.err, "not found") {
		t.Errorf("status of a missing cluster: exit %d, stderr %q; want 1 and not found", r.code, r.err)
	}
	if r := run(t.Context(), now, ns, "status"); r.code != 2 {
		t.Errorf("status without a cluster: exit %d, want 2", r.code)
	}
}

// checkStatusReport checks what `status -o format` printed for TestStatus's cluster.
func checkStatusReport(t *testing.T, format, ns string, rep *statusReport) {
	t.Helper()
	if rep.Namespace != ns || rep.Cluster != "main" || rep.Phase != "Degraded" || rep.Reason != "MemberUnhealthy" ||
		rep.Size != 3 || rep.ReadyMembers != 2 || rep.Leader != "main-1" || rep.ClusterID != "8e9e05c52164694d" {
		t.Errorf("-o %s: cluster %s/%s phase %q (%s), %d ready of %d, leader %q, ID %q", format,
			rep.Namespace, rep.Cluster, rep.Phase, rep.Reason, rep.ReadyMembers, rep.Size, rep.Leader, rep.ClusterID)
	}
	var names []string
	for _, m := range rep.Members {
		names = append(names, m.Name)
	}
	if want := []string{"main-0", "main-1", "main-2"}; !slices.Equal(names, want) {
		t.Fatalf("-o %s: members %v, want %v", format, names, want)
	}
	if m := rep.Members[0]; !m.Outdated || m.Leader || m.Role != "Follower" || m.DBSize != 20<<20 || m.DBSizeInUse != 5<<20 || !m.Healthy {
		t.Errorf("-o %s: main-0 = %+v, want an outdated healthy follower of 20 MiB, 5 MiB in use", format, m)
	}
	if m := rep.Members[1]; !m.Leader || m.Version != "3.6.16" {
		t.Errorf("-o %s: main-1 = %+v, want the leader on 3.6.16", format, m)
	}
	if m := rep.Members[2]; m.Healthy || m.LastError != "context deadline exceeded" {
		t.Errorf("-o %s: main-2 = %+v, want unhealthy with its last error", format, m)
	}
	if len(rep.Conditions) != 2 || rep.Conditions[0].Type != "Ready" || rep.Conditions[0].Status != metav1.ConditionFalse {
		t.Errorf("-o %s: conditions %+v, want Ready=False first of 2", format, rep.Conditions)
	}
	if d := rep.DefragmentRequest; d == nil || d.State != etcdv1beta2.DefragmentRequestPending || len(d.Defragmented) != 1 {
		t.Errorf("-o %s: defragmentRequest %+v, want Pending with main-0 done", format, d)
	}
	b := rep.Backups
	if n := b.Newest; n == nil || n.Backup != "nightly-202611270100" || n.By != "schedule/nightly" || n.Location != "S3://bucket/main_20261127T010000Z_v1" || b.RPOSeconds != 300 {
		t.Errorf("-o %s: newest backup %+v, RPO %ds; want nightly-202611270100 of schedule/nightly, 300s", format, n, b.RPOSeconds)
	}
	if len(b.Schedules) != 1 || b.Schedules[0].Name != "nightly" || b.Schedules[0].Fresh != "True" || b.Schedules[0].Schedule != "0 */6 * * *" {
		t.Errorf("-o %s: schedules %+v, want nightly only, fresh", format, b.Schedules)
	}
	if len(rep.Drills) != 1 || rep.Drills[0].Schedule != "nightly" || rep.Drills[0].LastDrill == nil || !rep.Drills[0].LastDrill.Passed ||
		rep.Drills[0].LastDrill.TimeToRestore == nil || rep.Drills[0].LastDrill.TimeToRestore.Duration != 95*time.Second {
		t.Errorf("-o %s: drills %+v, want nightly's passed drill with time to restore 1m35s", format, rep.Drills)
	}
	if rec := rep.LastRecovery; rec == nil || rec.RestoreName != "main-recovery-1" || rec.RPOSeconds != 3600 || rec.RPORevisions != 42 {
		t.Errorf("-o %s: lastRecovery %+v, want main-recovery-1, 3600s and 42 revisions", format, rec)
	}
}
