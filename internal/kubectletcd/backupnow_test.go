package kubectletcd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestBackupNow runs `backup now --wait` while the test plays the backup operator: the command
// creates <schedule>-manual-<time> from the schedule's template (prefix path, the template's
// labels, no owner, annotated with the schedule), follows it, and prints the outcome: the
// location and exit 0 for Completed, the reason and exit 1 for Failed. With -o json or yaml the
// progress goes to stderr and stdout parses as the finished EtcdBackup (a Failed one still
// printed, exit 1).
func TestBackupNow(t *testing.T) {
	completed := etcdv1beta2.BackupStatus{Phase: etcdv1beta2.BackupPhaseCompleted, Succeeded: true, Location: "S3://bucket/main_20261127T015300Z_v00000000000000000042_ns_main_8e9e05c52164694d",
		EtcdRevision: 42, Size: 3 << 20, SHA256: "abc123", EtcdVersion: "3.6.16", Member: "http://main-1:2379"}
	failed := etcdv1beta2.BackupStatus{Phase: etcdv1beta2.BackupPhaseFailed, Reason: "SecretNotFound: secret aws not found"}
	for _, tc := range []struct {
		name     string
		status   etcdv1beta2.BackupStatus
		format   string // -o
		code     int
		contains []string
	}{
		{
			name:     "completed",
			status:   completed,
			code:     0,
			contains: []string{"phase Completed", "Completed: S3://bucket/main_20261127T015300Z_v00000000000000000042_ns_main_8e9e05c52164694d", "revision 42, 3.0 MiB, sha256 abc123"},
		},
		{
			name:     "failed",
			status:   failed,
			code:     1,
			contains: []string{"phase Failed", "FAILED: SecretNotFound: secret aws not found"},
		},
		{name: "json", status: completed, format: "json", code: 0},
		{name: "yaml", status: completed, format: "yaml", code: 0},
		{name: "failed json", status: failed, format: "json", code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testutil.Namespace(t, k8s, "backupnow")
			now := time.Date(2026, 11, 27, 1, 53, 0, 0, time.UTC)
			newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
			newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{})

			args := []string{"backup", "now", "main", "--wait"}
			if tc.format != "" {
				args = append(args, "-o", tc.format)
			}
			wait := start(t, now, ns, args...)

			b := &etcdv1beta2.EtcdBackup{}
			key := client.ObjectKey{Namespace: ns, Name: "nightly-manual-20261127t015300z"}
			testutil.Eventually(t, testutil.Timeout, "the manual backup", testutil.NoError(func() error { return k8s.Get(t.Context(), key, b) }))
			if b.Spec.PathType != etcdv1beta2.BackupPathPrefix || b.Spec.EtcdCluster == nil || b.Spec.EtcdCluster.Name != "main" || b.Spec.S3 == nil || b.Spec.S3.Path != "bucket/main" {
				t.Errorf("spec = %+v, want the template's with pathType Prefix", b.Spec)
			}
			if b.Labels["team"] != "db" || b.Annotations[ManualBackupOfAnnotation] != "nightly" || len(b.OwnerReferences) != 0 {
				t.Errorf("labels %v, annotations %v, owners %v: want the template's labels, the schedule annotation, no owner", b.Labels, b.Annotations, b.OwnerReferences)
			}
			b.Status = tc.status
			b.Status.CompletionTime = &metav1.Time{Time: now}
			if err := k8s.Status().Update(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			r := wait()
			if r.code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tc.code, r.err)
			}
			created := fmt.Sprintf("etcdbackup %s/nightly-manual-20261127t015300z created from schedule nightly", ns)
			if tc.format == "" {
				mustContain(t, r.out, append(tc.contains, created)...)
				return
			}
			mustContain(t, r.err, created, "phase "+string(tc.status.Phase))
			got := decodeBackup(t, tc.format, r.out, key)
			if st := got.Status; st.Phase != tc.status.Phase || st.Location != tc.status.Location || st.SHA256 != tc.status.SHA256 ||
				st.EtcdRevision != tc.status.EtcdRevision || st.Size != tc.status.Size || st.Reason != tc.status.Reason {
				t.Errorf("-o %s: status %+v, want %+v", tc.format, st, tc.status)
			}
		})
	}
}

// TestBackupNowOutput: without --wait, -o prints the EtcdBackup just created (its status still
// empty) and the progress goes to stderr; another -o value is a usage error that creates
// nothing.
func TestBackupNowOutput(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "backupnow")
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
	newSchedule(t, ns, "nightly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/main"), etcdv1beta2.BackupScheduleStatus{})

	if r := run(t.Context(), now, ns, "backup", "now", "main", "-o", "table"); r.code != 2 || !strings.Contains(r.err, `backup now: -o "table": want json or yaml`) || r.out != "" {
		t.Errorf("backup now -o table: exit %d, stdout %q, stderr %q; want 2 and the usage error", r.code, r.out, r.err)
	}
	var list etcdv1beta2.EtcdBackupList
	if err := k8s.List(t.Context(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("backups after the usage error: %d (%v), want none", len(list.Items), err)
	}

	for i, format := range []string{"json", "yaml"} {
		at := now.Add(time.Duration(i) * time.Minute)
		r := run(t.Context(), at, ns, "backup", "now", "main", "-o", format)
		if r.code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, r.code, r.err)
		}
		key := client.ObjectKey{Namespace: ns, Name: "nightly-manual-" + at.Format(manualTimeFormat)}
		mustContain(t, r.err, fmt.Sprintf("etcdbackup %s created from schedule nightly", key))
		got := decodeBackup(t, format, r.out, key)
		if got.Status.Phase != "" || got.Annotations[ManualBackupOfAnnotation] != "nightly" || got.Spec.PathType != etcdv1beta2.BackupPathPrefix {
			t.Errorf("-o %s: %+v, want the backup as created: no phase yet, the schedule annotation, pathType Prefix", format, got)
		}
	}
}

// decodeBackup parses what `backup now -o format` printed as the EtcdBackup key, as the API
// returns it (kind, apiVersion, uid) without managedFields.
func decodeBackup(t *testing.T, format, out string, key client.ObjectKey) *etcdv1beta2.EtcdBackup {
	t.Helper()
	var got etcdv1beta2.EtcdBackup
	if err := decode(format, out, &got); err != nil {
		t.Fatalf("-o %s: %v\n%s", format, err, out)
	}
	if got.Kind != "EtcdBackup" || got.APIVersion != etcdv1beta2.GroupVersion.String() || client.ObjectKeyFromObject(&got) != key || got.UID == "" || got.ManagedFields != nil {
		t.Errorf("-o %s: %s %s %s (uid %q, %d managedFields), want EtcdBackup %s as the API returns it, without managedFields",
			format, got.APIVersion, got.Kind, client.ObjectKeyFromObject(&got), got.UID, len(got.ManagedFields), key)
	}
	return &got
}

// TestBackupNowChoosesSchedule: with two schedules of the cluster, `backup now` asks for
// --schedule and creates nothing; with it, it uses that one and returns at once without --wait.
func TestBackupNowChoosesSchedule(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "backupnow")
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
	newSchedule(t, ns, "hourly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/hourly"), etcdv1beta2.BackupScheduleStatus{})
	newSchedule(t, ns, "weekly", "main", etcdv1beta2.BackupStorageTypeS3, s3Source("bucket/weekly"), etcdv1beta2.BackupScheduleStatus{})

	r := run(t.Context(), now, ns, "backup", "now", "main")
	if r.code != 1 || !strings.Contains(r.err, "has 2 schedules (hourly, weekly): choose one with --schedule") {
		t.Errorf("without --schedule: exit %d, stderr %q", r.code, r.err)
	}
	var list etcdv1beta2.EtcdBackupList
	if err := k8s.List(t.Context(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("backups after the refused command: %d (%v), want none", len(list.Items), err)
	}
	r = run(t.Context(), now, ns, "backup", "now", "main", "--schedule", "weekly")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	b := &etcdv1beta2.EtcdBackup{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "weekly-manual-20261127t020000z"}, b); err != nil {
		t.Fatal(err)
	}
	if b.Spec.S3.Path != "bucket/weekly" {
		t.Errorf("path %q, want the weekly schedule's", b.Spec.S3.Path)
	}
}
