//go:build e2e

package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
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
// snapshot, once per provider (GCS and ABS in the long tier): the EtcdBackup ends Failed with a reason after a bounded number of attempts (the
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
	stores := framework.ObjectStores(t)
	// One namespace, bucket and member per provider; the members start together. make test runs
	// the S3 case (with its multipart upload's parts); the other providers' cases are in the long
	// tier (framework/tier.go).
	var cases []*cutCase
	for _, typ := range framework.StorageTypes {
		if !framework.Runs(t.Name() + "/" + string(typ)) {
			continue
		}
		c := &cutCase{typ: typ, bucket: stores.NewBucket(t, typ), ns: f.CreateNamespace(t, "backup-cutoff-"+string(typ))}
		c.member = fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", c.ns))
		// The Secret first, long before the backup: see secretsFirst.
		c.bucket.CreateSecret(t, f, c.ns, "creds")
		labels := map[string]string{"app": "backup-cutoff"}
		f.Create(t, framework.HeadlessService(c.ns, "db", labels, 2379))
		pod := framework.SingleEtcdPod(c.ns, "db-0", "db", labels, c.member)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		f.Create(t, pod)
		cases = append(cases, c)
	}
	for _, c := range cases {
		c.startAndKill(t, f)
	}

	// The retries back off 30 s and 60 s: wait for the three together.
	framework.Eventually(t, 5*time.Minute, "every EtcdBackup Failed", func(ctx context.Context) (bool, error) {
		var pending []string
		for _, c := range cases {
			b, err := getBackup(ctx, f, c.ns, "cut")
			if err != nil {
				return false, err
			}
			if b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
				t.Fatalf("the %s backup completed although its only member was killed mid-stream (%s after it started): %s at %s; if etcd had sent it all, make the database bigger",
					c.typ, b.Status.Duration.Duration, b.Status.SHA256, b.Status.Location)
			}
			if c.backup = b; b.Status.Phase != etcdv1beta2.BackupPhaseFailed {
				pending = append(pending, fmt.Sprintf("%s: phase %q, attempts %d, reason %q", c.typ, b.Status.Phase, b.Status.Attempts, b.Status.Reason))
			}
		}
		return len(pending) == 0, errors.New(strings.Join(pending, "; "))
	})
	for _, c := range cases {
		t.Run(string(c.typ), func(t *testing.T) { c.check(t, f, stores) })
	}
}

// cutCase is the backup of one provider whose member is killed.
type cutCase struct {
	typ    etcdv1beta2.BackupStorageType
	bucket *framework.Bucket
	ns     string
	member string
	killed time.Time
	backup *etcdv1beta2.EtcdBackup
}

// startAndKill fills the member with ~240 MiB, creates the EtcdBackup and kills the member as
// soon as it starts sending the snapshot.
func (c *cutCase) startAndKill(t *testing.T, f *framework.Framework) {
	t.Helper()
	f.WaitForPodReady(t, c.ns, "db-0", 2*time.Minute)
	cli := f.EtcdClient(t, c.member)
	start := time.Now()
	const values, valueSize = 480, 512 << 10
	putKeys(t, cli, "/big/", values, valueSize, 1, 4)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	st, err := cli.Status(ctx, c.member)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	_ = cli.Close()

	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "cut"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{c.member},
			StorageType:   c.typ,
			BackupSource:  c.bucket.Source("db/etcd.backup", "creds"),
		},
	})
	etcdPID := hostPID(t, c.member)
	created := time.Now()
	var logs string
	tail := int64(20)
	for !strings.Contains(logs, etcdSendingSnapshot) {
		if time.Since(created) > 2*time.Minute {
			t.Fatalf("%s: etcd did not start sending a snapshot within 2m of the EtcdBackup's creation; its log ends:\n%s", c.typ, logs)
		}
		data, err := f.Clientset.CoreV1().Pods(c.ns).GetLogs("db-0", &corev1.PodLogOptions{TailLines: &tail}).DoRaw(t.Context())
		if err != nil {
			t.Fatalf("reading the log of %s/db-0: %v", c.ns, err)
		}
		logs = string(data)
		if b, err := getBackup(t.Context(), f, c.ns, "cut"); err == nil && b.IsFinished() {
			t.Fatalf("%s: the backup ended %s before etcd started sending the snapshot: %s", c.typ, b.Status.Phase, b.Status.Reason)
		}
		time.Sleep(50 * time.Millisecond) // a log has no watch; poll it fast, the snapshot takes ~1 s
	}
	if err := syscall.Kill(etcdPID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing etcd (pid %d): %v", etcdPID, err)
	}
	c.killed = time.Now()
	if strings.Contains(logs, etcdSentSnapshot) {
		t.Fatalf("%s: etcd finished sending the snapshot before the member was killed: make the database bigger; log:\n%s", c.typ, logs)
	}
	t.Logf("%s: wrote %d MiB in %s (database %d MiB); member killed %s after the EtcdBackup was created, while sending the snapshot",
		c.typ, values*valueSize>>20, created.Sub(start).Round(time.Millisecond), st.DbSize>>20, c.killed.Sub(created).Round(time.Millisecond))
	framework.Eventually(t, time.Minute, c.ns+"/db-0 Failed, not restarted", func(ctx context.Context) (bool, error) {
		p, err := f.Clientset.CoreV1().Pods(c.ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodFailed, fmt.Errorf("phase %s", p.Status.Phase)
	})
}

// check asserts on the Failed backup: status, the first attempt's reason, an empty bucket.
func (c *cutCase) check(t *testing.T, f *framework.Framework, stores *framework.ObjStores) {
	b := c.backup
	if b.Status.Succeeded || b.Status.Reason == "" || failedReason(b) == "" {
		t.Errorf("failed backup's status: succeeded %t, Reason %q, Failed condition reason %q; want false and both set",
			b.Status.Succeeded, b.Status.Reason, failedReason(b))
	}
	if b.Status.Attempts < 1 || b.Status.Attempts > etcdbackup.MaxAttempts {
		t.Errorf("status.attempts %d, want between 1 and %d (bounded retries)", b.Status.Attempts, etcdbackup.MaxAttempts)
	}
	t.Logf("Failed at most %s after the kill, %d attempts, condition reason %s: %s", time.Since(c.killed).Round(time.Second),
		b.Status.Attempts, failedReason(b), b.Status.Reason)

	// The first attempt must have failed on the cut stream, not on something the test did not do.
	var events corev1.EventList
	if err := f.Client.List(t.Context(), &events, client.InNamespace(c.ns)); err != nil {
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

	if keys := c.bucket.Keys(t, ""); len(keys) != 0 {
		t.Errorf("bucket %s holds %v after a failed backup; want nothing (uploads are all-or-nothing)", c.bucket.Name, keys)
	}
	if c.typ != etcdv1beta2.BackupStorageTypeS3 {
		return
	}
	// Nor parts of the aborted multipart upload, which S3 would keep (and bill) until aborted.
	s3c := s3.New(s3.Options{
		Region: stores.S3Region, BaseEndpoint: aws.String(stores.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(stores.S3AccessKey, stores.S3SecretKey, ""),
	})
	uploads, err := s3c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(c.bucket.Name), Prefix: aws.String("db/etcd.backup"),
	})
	if err != nil {
		t.Fatalf("listing multipart uploads in %s: %v", c.bucket.Name, err)
	}
	if len(uploads.Uploads) != 0 {
		t.Errorf("bucket %s has %d unfinished multipart uploads after the failed backup; want them aborted", c.bucket.Name, len(uploads.Uploads))
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
