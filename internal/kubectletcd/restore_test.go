package kubectletcd

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestRestoreInPlace: restoring a cluster in place names the cluster and the backup in the
// prompt; a wrong answer creates nothing, the cluster's name creates an EtcdRestore with
// backupRef and no template; a backup that did not complete is refused before any prompt. With
// -o the prompt goes to stderr and stdout parses as the EtcdRestore created (or stays empty when
// the user aborts); another -o value is a usage error.
func TestRestoreInPlace(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "restore")
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{Phase: etcdv1beta2.ClusterPhaseRunning, Size: 3, ReadyMembers: 3, CurrentVersion: "3.6.16", LastRevision: 9000})
	for name, phase := range map[string]etcdv1beta2.BackupPhase{"good": etcdv1beta2.BackupPhaseCompleted, "broken": etcdv1beta2.BackupPhaseFailed} {
		b := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "main"}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: s3Source("bucket/" + name)}}
		if err := k8s.Create(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		b.Status = etcdv1beta2.BackupStatus{Phase: phase, Location: "S3://bucket/" + name, EtcdRevision: 8000, LastSuccessDate: &metav1.Time{Time: now.Add(-time.Hour)}}
		if err := k8s.Status().Update(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	restores := func() []etcdv1beta2.EtcdRestore {
		var l etcdv1beta2.EtcdRestoreList
		if err := k8s.List(t.Context(), &l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}

	r := runIn(t.Context(), now, ns, "yes\n", "restore", "main", "--backup", "good")
	t.Log("\n" + r.out)
	mustContain(t, r.out, "This REPLACES EtcdCluster "+ns+"/main (Running, 3 of 3 members ready, etcd 3.6.16, last revision 9000)",
		"with backup good (S3://bucket/good, revision 8000, taken 2026-11-27T02:00:00Z)", "Type the cluster name (main)", "Aborted: nothing was created.")
	if r.code != 1 || len(restores()) != 0 {
		t.Fatalf("wrong answer: exit %d, %d restores; want 1 and none", r.code, len(restores()))
	}

	r = runIn(t.Context(), now, ns, "main\n", "restore", "main", "--backup", "good")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	mustContain(t, r.out, "etcdrestore "+ns+"/main-restore-20261127t030000z created: backup good")
	got := restores()
	if len(got) != 1 || got[0].Spec.EtcdCluster.Name != "main" || got[0].Spec.ClusterTemplate != nil || got[0].Spec.BackupRef == nil || got[0].Spec.BackupRef.Name != "good" {
		t.Fatalf("restores %+v, want one of main in place from backupRef good", got)
	}

	r = run(t.Context(), now, ns, "restore", "main", "--backup", "broken", "--yes")
	if r.code != 1 || !strings.Contains(r.err, `is "Failed", not Completed`) {
		t.Errorf("failed backup: exit %d, stderr %q", r.code, r.err)
	}

	// A point in time: --to a revision, a time, or the newest captured.
	for to, want := range map[string]etcdv1beta2.PointInTime{
		"8500":                 {Revision: 8500},
		"2026-11-27T02:30:00Z": {Time: &metav1.Time{Time: now.Add(-30 * time.Minute)}},
		"captured":             {},
	} {
		before := len(restores())
		r = run(t.Context(), now.Add(time.Duration(before)*time.Minute), ns, "restore", "main", "--backup", "good", "--to", to, "--yes")
		mustContain(t, r.out, "brought to "+to+" by the capture after it")
		got := restores()
		var made *etcdv1beta2.EtcdRestore
		for i := range got {
			if p := got[i].Spec.PointInTime; p != nil && p.Revision == want.Revision && (p.Time == nil) == (want.Time == nil) && (p.Time == nil || p.Time.Equal(want.Time)) {
				made = &got[i]
			}
		}
		if r.code != 0 || len(got) != before+1 || made == nil {
			t.Fatalf("--to %s: exit %d (%s), restores %d, none with pointInTime %+v", to, r.code, r.err, len(got), want)
		}
	}
	if r = run(t.Context(), now, ns, "restore", "main", "--backup", "good", "--to", "yesterday", "--yes"); r.code != 2 || !strings.Contains(r.err, "not a revision, an RFC 3339 time or 'captured'") {
		t.Errorf("--to yesterday: exit %d, stderr %q", r.code, r.err)
	}

	// -o: the prompt and progress on stderr, the EtcdRestore created on stdout.
	before := len(restores())
	if r = run(t.Context(), now, ns, "restore", "main", "--backup", "good", "--yes", "-o", "wide"); r.code != 2 || !strings.Contains(r.err, `restore: -o "wide": want json or yaml`) || r.out != "" || len(restores()) != before {
		t.Errorf("restore -o wide: exit %d, stdout %q, stderr %q, %d restores; want 2, the usage error and none created", r.code, r.out, r.err, len(restores())-before)
	}
	r = runIn(t.Context(), now, ns, "no\n", "restore", "main", "--backup", "good", "-o", "json")
	if r.code != 1 || r.out != "" || len(restores()) != before {
		t.Errorf("-o json, aborted: exit %d, stdout %q, %d restores; want 1, nothing on stdout, none created", r.code, r.out, len(restores())-before)
	}
	mustContain(t, r.err, "This REPLACES EtcdCluster "+ns+"/main", "Type the cluster name (main)", "Aborted: nothing was created.")
	for i, format := range []string{"json", "yaml"} {
		at := now.Add(time.Hour + time.Duration(i)*time.Minute)
		r = runIn(t.Context(), at, ns, "main\n", "restore", "main", "--backup", "good", "-o", format)
		if r.code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, r.code, r.err)
		}
		key := client.ObjectKey{Namespace: ns, Name: "main-restore-" + at.Format(manualTimeFormat)}
		mustContain(t, r.err, "This REPLACES EtcdCluster "+ns+"/main", "etcdrestore "+key.String()+" created: backup good")
		got := decodeRestore(t, format, r.out, key)
		if got.Spec.EtcdCluster.Name != "main" || got.Spec.BackupRef == nil || got.Spec.BackupRef.Name != "good" || got.Status.Phase != "" {
			t.Errorf("-o %s: spec %+v, phase %q; want main in place from backupRef good, no phase yet", format, got.Spec, got.Status.Phase)
		}
	}
}

// decodeRestore parses what `restore -o format` printed as the EtcdRestore key, as the API
// returns it (kind, apiVersion, uid) without managedFields.
func decodeRestore(t *testing.T, format, out string, key client.ObjectKey) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var got etcdv1beta2.EtcdRestore
	if err := decode(format, out, &got); err != nil {
		t.Fatalf("-o %s: %v\n%s", format, err, out)
	}
	if got.Kind != "EtcdRestore" || got.APIVersion != etcdv1beta2.GroupVersion.String() || client.ObjectKeyFromObject(&got) != key || got.UID == "" || got.ManagedFields != nil {
		t.Errorf("-o %s: %s %s %s (uid %q, %d managedFields), want EtcdRestore %s as the API returns it, without managedFields",
			format, got.APIVersion, got.Kind, client.ObjectKeyFromObject(&got), got.UID, len(got.ManagedFields), key)
	}
	return &got
}

// TestRestoreInto: restoring into a new name asks nothing (nothing is replaced), uses the
// cluster as template and the schedule's newest backup, and --wait follows the restore to its
// outcome (the test writes the restore operator's status): Succeeded with what it restored and
// exit 0, or FAILED with the reason and exit 1. With -o json or yaml the progress goes to stderr
// and stdout parses as the finished EtcdRestore (a Failed one still printed, exit 1).
func TestRestoreInto(t *testing.T) {
	succeeded := etcdv1beta2.RestoreStatus{Phase: etcdv1beta2.RestorePhaseSucceeded, Succeeded: true, BackupLocation: "S3://bucket/main_1",
		RestoredRevision: 1000008000, Duration: &metav1.Duration{Duration: 95 * time.Second}, Verification: &etcdv1beta2.RestoreVerification{Keys: 1200, Passed: true, MembersVerified: 3}}
	failed := etcdv1beta2.RestoreStatus{Phase: etcdv1beta2.RestorePhaseFailed, Reason: "SeedFailed: etcdutl snapshot restore: checksum mismatch"}
	for _, tc := range []struct {
		name     string
		status   etcdv1beta2.RestoreStatus
		format   string // -o
		code     int
		contains []string
	}{
		{name: "succeeded", code: 0, status: succeeded,
			contains: []string{"phase Succeeded", "Succeeded: S3://bucket/main_1 restored at revision 1000008000 in 1m35s, 1200 keys verified"}},
		{name: "failed", code: 1, status: failed,
			contains: []string{"phase Failed", "FAILED: SeedFailed: etcdutl snapshot restore: checksum mismatch"}},
		{name: "json", status: succeeded, format: "json", code: 0},
		{name: "yaml", status: succeeded, format: "yaml", code: 0},
		{name: "failed yaml", status: failed, format: "yaml", code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testutil.Namespace(t, k8s, "restore")
			now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
			newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
			newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{
				LastSuccessfulTime: &metav1.Time{Time: now.Add(-time.Hour)}, LastSuccessfulBackup: "nightly-1", LastSuccessfulLocation: "S3://bucket/main_1"})

			args := []string{"restore", "main", "--into", "scratch", "--wait"}
			if tc.format != "" {
				args = append(args, "-o", tc.format)
			}
			wait := start(t, now, ns, args...)
			rs := &etcdv1beta2.EtcdRestore{}
			key := client.ObjectKey{Namespace: ns, Name: "scratch-restore-20261127t030000z"}
			testutil.Eventually(t, testutil.Timeout, "the EtcdRestore", testutil.NoError(func() error { return k8s.Get(t.Context(), key, rs) }))
			if rs.Spec.EtcdCluster.Name != "scratch" || rs.Spec.ClusterTemplate == nil || rs.Spec.ClusterTemplate.Name != "main" || rs.Spec.BackupScheduleRef == nil || rs.Spec.BackupScheduleRef.Name != "nightly" {
				t.Errorf("spec %+v, want scratch from template main and schedule nightly", rs.Spec)
			}
			rs.Status = tc.status
			if err := k8s.Status().Update(t.Context(), rs); err != nil {
				t.Fatal(err)
			}
			r := wait()
			if r.code != tc.code || strings.Contains(r.out+r.err, "REPLACES") {
				t.Errorf("exit %d, want %d without a prompt (stderr %q)", r.code, tc.code, r.err)
			}
			created := []string{"into new cluster scratch (template main)", "the newest backup of schedule nightly (now nightly-1, S3://bucket/main_1"}
			if tc.format == "" {
				mustContain(t, r.out, append(tc.contains, created...)...)
				return
			}
			mustContain(t, r.err, append(created, "phase "+string(tc.status.Phase))...)
			got := decodeRestore(t, tc.format, r.out, key)
			st, want := got.Status, tc.status
			if st.Phase != want.Phase || st.Reason != want.Reason || st.BackupLocation != want.BackupLocation || st.RestoredRevision != want.RestoredRevision ||
				(st.Verification == nil) != (want.Verification == nil) || (st.Verification != nil && *st.Verification != *want.Verification) {
				t.Errorf("-o %s: status %+v (verification %+v), want %+v (verification %+v)", tc.format, st, st.Verification, want, want.Verification)
			}
			if got.Spec.EtcdCluster.Name != "scratch" || got.Spec.BackupScheduleRef == nil || got.Spec.BackupScheduleRef.Name != "nightly" {
				t.Errorf("-o %s: spec %+v, want scratch from schedule nightly", tc.format, got.Spec)
			}
		})
	}
}
