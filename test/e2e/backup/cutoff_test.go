//go:build e2e

package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// What etcd logs when it starts and when it finishes streaming a snapshot to a client
// (server/etcdserver/api/v3rpc/maintenance.go).
const (
	etcdSendingSnapshot = "sending database snapshot to client"
	etcdSentSnapshot    = "sent database snapshot to client"
)

// TestBackupStreamCutOff kills the only member while the backup operator streams its ~240 MiB
// snapshot: the EtcdBackup ends Failed with a reason after a bounded number of attempts (the
// first one failed on the broken stream, the retries on the missing member), and no object, not
// even a partial one, is visible in the bucket. The member is a bare pod with restartPolicy Never,
// so it cannot come back with the data and let a retry succeed.
//
// The snapshot streams in well under a second on the local cluster, faster than a pod deletion
// reaches the container, so the test kills the etcd process from the host (SIGKILL, as a crash
// would): it needs the local cluster, whose pods are processes of this machine.
func TestBackupStreamCutOff(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	ns := f.CreateNamespace(t, "backup-cutoff")
	labels := map[string]string{"app": "backup-cutoff"}
	member := fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))
	f.Create(t, framework.HeadlessService(ns, "db", labels, 2379))
	pod := framework.SingleEtcdPod(ns, "db-0", "db", labels, member)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	f.Create(t, pod)
	f.WaitForPodReady(t, ns, "db-0", 2*time.Minute)

	cli := etcdClient(t, f, member)
	start := time.Now()
	const values, valueSize = 480, 512 << 10
	putKeys(t, cli, "/big/", values, valueSize, 1, 4)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	st, err := cli.Status(ctx, member)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d MiB in %s; database %d MiB", values*valueSize>>20, time.Since(start).Round(time.Millisecond), st.DbSize>>20)

	bucket.CreateSecret(t, f, ns, "creds")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cut"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{member},
			StorageType:   bucket.Type,
			BackupSource:  bucket.Source("db/etcd.backup", "creds"),
		},
	})

	// Kill the member as soon as it starts sending the snapshot.
	etcdPID := hostPID(t, member)
	created := time.Now()
	var logs string
	tail := int64(20)
	for !strings.Contains(logs, etcdSendingSnapshot) {
		if time.Since(created) > 2*time.Minute {
			t.Fatalf("etcd did not start sending a snapshot within 2m of the EtcdBackup's creation; its log ends:\n%s", logs)
		}
		data, err := f.Clientset.CoreV1().Pods(ns).GetLogs("db-0", &corev1.PodLogOptions{TailLines: &tail}).DoRaw(t.Context())
		if err != nil {
			t.Fatalf("reading the log of db-0: %v", err)
		}
		logs = string(data)
		time.Sleep(50 * time.Millisecond) // a log has no watch; poll it fast, the snapshot takes seconds
	}
	if err := syscall.Kill(etcdPID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing etcd (pid %d): %v", etcdPID, err)
	}
	killed := time.Now()
	if strings.Contains(logs, etcdSentSnapshot) {
		t.Fatalf("etcd finished sending the snapshot before the member was killed: make the database bigger; log:\n%s", logs)
	}
	t.Logf("member killed %s after the EtcdBackup was created, while sending the snapshot", killed.Sub(created).Round(time.Millisecond))
	framework.Eventually(t, time.Minute, "db-0 Failed, not restarted", func(ctx context.Context) (bool, error) {
		p, err := f.Clientset.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodFailed, fmt.Errorf("phase %s", p.Status.Phase)
	})

	var b *etcdv1beta2.EtcdBackup
	framework.Eventually(t, 5*time.Minute, "EtcdBackup Failed", func(ctx context.Context) (bool, error) {
		if b, err = getBackup(ctx, f, ns, "cut"); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
			t.Fatalf("the backup completed although its only member was killed mid-stream (%s after it started): %s at %s; if etcd had sent it all, make the database bigger",
				b.Status.Duration.Duration, b.Status.SHA256, b.Status.Location)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseFailed, fmt.Errorf("phase %q, attempts %d, reason %q",
			b.Status.Phase, b.Status.Attempts, b.Status.Reason)
	})
	if b.Status.Succeeded || b.Status.Reason == "" || failedReason(b) == "" {
		t.Errorf("failed backup's status: succeeded %t, Reason %q, Failed condition reason %q; want false and both set",
			b.Status.Succeeded, b.Status.Reason, failedReason(b))
	}
	if b.Status.Attempts < 1 || b.Status.Attempts > 3 {
		t.Errorf("status.attempts %d, want between 1 and 3 (bounded retries)", b.Status.Attempts)
	}
	t.Logf("Failed %s after the kill, %d attempts, condition reason %s: %s", time.Since(killed).Round(time.Second),
		b.Status.Attempts, failedReason(b), b.Status.Reason)

	// The first attempt must have failed on the cut stream, not on something the test did not do.
	var events corev1.EventList
	if err := f.Client.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "EtcdBackup" && e.InvolvedObject.Name == "cut" && e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
			t.Logf("event %s (x%d): %s", e.Reason, e.Count, e.Message)
		}
	}
	if !slices.Contains(reasons, etcdv1beta2.ReasonSnapshotFailed) && !slices.Contains(reasons, etcdv1beta2.ReasonVerificationFailed) {
		t.Errorf("Warning events of the backup have reasons %v; want %s or %s for the attempt whose stream was cut",
			reasons, etcdv1beta2.ReasonSnapshotFailed, etcdv1beta2.ReasonVerificationFailed)
	}

	if keys := bucket.Keys(t, ""); len(keys) != 0 {
		t.Errorf("bucket %s holds %v after a failed backup; want nothing (uploads are all-or-nothing)", bucket.Name, keys)
	}
}

// hostPID finds, on this machine, the etcd process of a pod started with
// --advertise-client-urls advertise (unique per test namespace).
func hostPID(t testing.TB, advertise string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if i := slices.Index(args, "--advertise-client-urls"); i >= 0 && i+1 < len(args) && args[i+1] == advertise &&
			strings.HasSuffix(args[0], "etcd") {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no etcd process advertising %s on this machine: the test needs the local cluster (hack/local-cluster.sh), whose pods run here", advertise)
	return 0
}
