//go:build e2e && chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The backup kinds write this much before the backup (on top of the load), so that the
// snapshot streams long enough for a kill to land inside it.
const (
	fillValues    = 320
	fillValueSize = 512 << 10 // 160 MiB in all
	// killWindow bounds the seeded wait between the stream's start and the kill.
	killWindow = 200 * time.Millisecond
	// What etcd logs when it starts and when it finishes streaming a snapshot to a client
	// (server/etcdserver/api/v3rpc/maintenance.go).
	etcdSendingSnapshot = "sending database snapshot to client"
	etcdSentSnapshot    = "successfully sent database snapshot to client"
)

// backupOperatorKilled takes a one-shot backup of the cluster to an exact path in MinIO and
// kills the backup operator while etcd streams the snapshot: the process is killed from the
// host at a seeded point of the stream (a crash: no upload aborted, no status written), then
// its pod is force-deleted. The Deployment's next operator must finish the backup, and the
// bucket must hold nothing but the verified object status names.
func backupOperatorKilled(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	op := runningPod(t, f, framework.OperatorNamespace, map[string]string{"app.kubernetes.io/name": "backup-operator"})
	pids := hostPIDs(t, op, "backup-operator")
	bucket := startBackup(t, f, ns, "c/etcd.backup", etcdv1beta2.BackupPathKey)
	member, seen := streamingMember(t, f, ns, "b")
	time.Sleep(time.Duration(rng.Int64N(int64(killWindow)))) //nolint:forbidigo // a seeded point inside the snapshot stream
	kill(t, pids)
	killed := time.Now()
	where := "after etcd had sent the whole snapshot"
	if !memberLogged(t, f, ns, member.Name, seen.Add(-5*time.Second), etcdSentSnapshot) {
		where = "while etcd streamed the snapshot"
	}
	t.Logf("fault: backup operator %s killed %s after %s was seen sending the snapshot, %s", op.Name, killed.Sub(seen).Round(time.Millisecond), member.Name, where)
	killOperator(t, f, "backup-operator")
	b := waitBackupCompleted(t, f, ns, "b")
	verifyBucket(t, bucket, b)
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed %s; the backup (%d MiB, a whole stream takes %s) completed %s after the kill, attempts %d",
		where, b.Status.Size>>20, streamTook(t, f, ns, b, seen), time.Since(killed).Round(100*time.Millisecond), b.Status.Attempts)}
}

// memberKilledDuringSnapshot takes a one-shot backup of the cluster under a prefix in MinIO and
// kills the member that streams the snapshot, at a seeded point of the stream: its etcd
// process from the host (the stream breaks at once), then its pod (its data goes with the
// emptyDir). The backup is retried on another member and completes; the bucket holds only the
// verified object; the operator replaces the member.
func memberKilledDuringSnapshot(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	pids := map[string][]int{}
	for _, p := range memberPods(t, f, ns) {
		pids[p.Name] = hostPIDs(t, &p, "etcd")
	}
	bucket := startBackup(t, f, ns, "c/backup", etcdv1beta2.BackupPathPrefix)
	member, seen := streamingMember(t, f, ns, "b")
	time.Sleep(time.Duration(rng.Int64N(int64(killWindow)))) //nolint:forbidigo // a seeded point inside the snapshot stream
	where := "after it had sent the whole snapshot"
	if !memberLogged(t, f, ns, member.Name, seen.Add(-5*time.Second), etcdSentSnapshot) {
		where = "while it streamed the snapshot"
	}
	kill(t, pids[member.Name])
	killed := time.Now()
	forceDelete(t, f, ns, member.Name)
	t.Logf("fault: member %s killed %s after it was seen sending the snapshot, %s", member.Name, killed.Sub(seen).Round(time.Millisecond), where)
	b := waitBackupCompleted(t, f, ns, "b")
	verifyBucket(t, bucket, b)
	if podOf(b.Status.Member) == member.Name {
		// Not wrong (the object verified), but the kill came too late to test anything.
		where = "after it had sent the whole snapshot (the backup completed from it)"
	}
	waitHealed(t, f, ns, 3)
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed %s; the backup (%d MiB, a whole stream takes %s) completed from %s after %d attempts, %s after the kill",
		where, b.Status.Size>>20, streamTook(t, f, ns, b, seen), podOf(b.Status.Member), b.Status.Attempts, time.Since(killed).Round(100*time.Millisecond))}
}

// startBackup fills cluster c with fillValues big values, then creates the one-shot
// EtcdBackup "b" of it to key of a new MinIO bucket, and returns the bucket.
func startBackup(t *testing.T, f *framework.Framework, ns, key string, pathType etcdv1beta2.BackupPathType) *framework.Bucket {
	t.Helper()
	return startBackupOf(t, f, ns, "c", "b", key, pathType)
}

// startBackupOf is startBackup of another cluster, into the one-shot EtcdBackup named backup.
func startBackupOf(t *testing.T, f *framework.Framework, ns, cluster, backup, key string, pathType etcdv1beta2.BackupPathType) *framework.Bucket {
	t.Helper()
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, cluster))
	start := time.Now()
	value := strings.Repeat("v", fillValueSize)
	framework.PutKeys(t, cli, 0, fillValues, 1, 4, func(i int) (string, string) { return fmt.Sprintf("/fill/%04d", i), value })
	t.Logf("wrote %d MiB in %s", fillValues*fillValueSize>>20, time.Since(start).Round(100*time.Millisecond))
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backup},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: cluster},
			StorageType:  bucket.Type,
			BackupSource: bucket.Source(key, "aws"),
			PathType:     pathType,
		},
	})
	return bucket
}

// streamingMember waits until a member logs that it started sending a snapshot (the
// EtcdBackup's first attempt) and returns that member's pod and when it was seen. A log has
// no watch: it polls every member's log fast, as the stream lasts about a second.
func streamingMember(t *testing.T, f *framework.Framework, ns, backup string) (*corev1.Pod, time.Time) {
	t.Helper()
	since := time.Now().Add(-2 * time.Second)
	pods := memberPods(t, f, ns)
	for start := time.Now(); time.Since(start) < 2*time.Minute; {
		for i := range pods {
			if memberLogged(t, f, ns, pods[i].Name, since, etcdSendingSnapshot) {
				return &pods[i], time.Now()
			}
		}
		// A stream that ended before a poll saw it is found by the next one (the log keeps
		// the line); the kind then notes that its kill came late.
		b := &etcdv1beta2.EtcdBackup{}
		if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: backup}, b); err == nil && b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			t.Fatalf("the backup failed before a member was seen sending the snapshot: %s", b.Status.Reason)
		}
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // pacing of a bounded log poll; the stream lasts about a second
	}
	t.Fatalf("no member started sending a snapshot within 2m of the EtcdBackup's creation")
	return nil, time.Time{}
}

// memberLogged reports whether the log of member pod since the given time holds msg.
func memberLogged(t *testing.T, f *framework.Framework, ns, pod string, since time.Time, msg string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st := metav1.NewTime(since)
	data, err := f.Clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{SinceTime: &st}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the log of %s/%s: %v", ns, pod, err)
	}
	return strings.Contains(string(data), msg)
}

// runningPod returns the running pod (not being deleted) with the given labels.
func runningPod(t *testing.T, f *framework.Framework, ns string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	t.Fatalf("no running pod in %s with labels %v", ns, labels)
	return nil
}

// hostPIDs returns the processes of pod's containers whose executable is named binary. The
// local cluster's pods are processes of this machine, found by the pod's UID in their cgroup
// (cgroupfs or systemd naming). A signal from here lands at once, where a pod deletion
// reaches the container only after a second or so, longer than a snapshot stream lasts.
func hostPIDs(t *testing.T, pod *corev1.Pod, binary string) []int {
	t.Helper()
	uid := string(pod.UID)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		cg, err := os.ReadFile(filepath.Join(d, "cgroup"))
		if err != nil || !(strings.Contains(string(cg), uid) || strings.Contains(string(cg), strings.ReplaceAll(uid, "-", "_"))) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || filepath.Base(strings.Split(string(cmdline), "\x00")[0]) != binary {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no %s process of pod %s/%s on this machine: the kind needs the local cluster (hack/local-cluster.sh), whose pods run here", binary, pod.Namespace, pod.Name)
	}
	return pids
}

// kill sends SIGKILL to the processes, as a crash would end them.
func kill(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing pid %d: %v", pid, err)
		}
	}
}

// podOf is the pod name in a member's client URL, http://<pod>.<cluster>.<ns>.svc:2379.
func podOf(url string) string {
	host := url[strings.Index(url, "://")+3:]
	return host[:strings.IndexAny(host+".", ".:")]
}

// streamTook is how long the member that served the completed backup took to stream it, as
// it logged (etcd's "took"), or "?" when its log does not say.
func streamTook(t *testing.T, f *framework.Framework, ns string, b *etcdv1beta2.EtcdBackup, since time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st := metav1.NewTime(since.Add(-2 * time.Second))
	data, err := f.Clientset.CoreV1().Pods(ns).GetLogs(podOf(b.Status.Member), &corev1.PodLogOptions{SinceTime: &st}).DoRaw(ctx)
	if err != nil {
		return "?"
	}
	took := "?"
	for _, line := range strings.Split(string(data), "\n") {
		var entry struct {
			Msg  string `json:"msg"`
			Took string `json:"took"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == etcdSentSnapshot {
			took = entry.Took
		}
	}
	return took
}

// waitBackupCompleted waits for the EtcdBackup to complete and fails at once when it fails.
func waitBackupCompleted(t *testing.T, f *framework.Framework, ns, name string) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{}
	framework.Eventually(t, healTimeout, "EtcdBackup "+name+" Completed", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			t.Fatalf("EtcdBackup %s/%s failed after %d attempts: %s", ns, name, b.Status.Attempts, b.Status.Reason)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseCompleted, fmt.Errorf("phase %q, attempts %d, reason %q", b.Status.Phase, b.Status.Attempts, b.Status.Reason)
	})
	return b
}

// verifyBucket checks that the bucket holds exactly one object, the one the backup's status
// names, with the status's sha256 and size, and that it is a whole etcd snapshot (its
// trailing checksum matches): nothing partial that a listing would take for a backup.
func verifyBucket(t *testing.T, bucket *framework.Bucket, b *etcdv1beta2.EtcdBackup) {
	t.Helper()
	keys := bucket.Keys(t, "")
	for _, key := range keys {
		file := filepath.Join(t.TempDir(), "object")
		sum, size := bucket.Download(t, key, file)
		if sum != b.Status.SHA256 || size != b.Status.Size {
			t.Errorf("object %s: sha256 %s, %d bytes; the backup's status says %s, %d bytes (%s)", key, sum, size, b.Status.SHA256, b.Status.Size, b.Status.Location)
		}
		if !wholeSnapshot(t, file) {
			t.Errorf("object %s is not a whole etcd snapshot", key)
		}
		_ = os.Remove(file)
	}
	if len(keys) != 1 || !strings.HasSuffix(b.Status.Location, "/"+keys[0]) {
		t.Errorf("bucket %s holds %v; want exactly the backup at %s", bucket.Name, keys, b.Status.Location)
	}
}

// wholeSnapshot reports whether the file ends with etcd's checksum of the rest.
func wholeSnapshot(t *testing.T, file string) bool {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	vr := snapshot.NewVerifyingReader(fh)
	if _, err := io.Copy(io.Discard, vr); err != nil {
		t.Logf("%s: %v", file, err)
		return false
	}
	return vr.Verified()
}
