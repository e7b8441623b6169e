//go:build e2e

package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// secretsFirst: every test creates its credentials Secrets right after its namespace. The
// operators now read Secrets uncached (internal/manager), so a Secret created just before its
// EtcdBackup is found; the order stays as the natural one.

// putKeys writes n keys prefix%08d with valueSize-byte values, batched into transactions of
// batch puts (etcd's --max-txn-ops defaults to 128), `workers` transactions in flight.
func putKeys(t testing.TB, cli *clientv3.Client, prefix string, n, valueSize, batch, workers int) {
	t.Helper()
	val := make([]byte, valueSize)
	_, _ = rand.Read(val)
	for i := range val { // printable, so a failure message quoting a value stays readable
		val[i] = 'a' + val[i]%26
	}
	framework.PutKeys(t, cli, 0, n, batch, workers, func(i int) (string, string) {
		return fmt.Sprintf("%s%08d", prefix, i), string(val)
	})
}

// countKeys returns how many keys start with prefix.
func countKeys(t testing.TB, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("counting keys under %s: %v", prefix, err)
	}
	return resp.Count
}

// getBackup reads the EtcdBackup ns/name.
func getBackup(ctx context.Context, f *framework.Framework, ns, name string) (*etcdv1beta2.EtcdBackup, error) {
	b := &etcdv1beta2.EtcdBackup{}
	err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b)
	return b, err
}

// waitCompleted waits for the EtcdBackup to complete and fails the test at once when it fails.
func waitCompleted(t testing.TB, f *framework.Framework, ns, name string, timeout time.Duration) *etcdv1beta2.EtcdBackup {
	t.Helper()
	var b *etcdv1beta2.EtcdBackup
	framework.Eventually(t, timeout, "EtcdBackup "+ns+"/"+name+" Completed", func(ctx context.Context) (bool, error) {
		var err error
		if b, err = getBackup(ctx, f, ns, name); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			t.Fatalf("EtcdBackup %s/%s failed: %s", ns, name, b.Status.Reason)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseCompleted, fmt.Errorf("phase %q, attempts %d, reason %q",
			b.Status.Phase, b.Status.Attempts, b.Status.Reason)
	})
	return b
}

// failedReason returns the reason of the backup's Failed condition, or "".
func failedReason(b *etcdv1beta2.EtcdBackup) string {
	if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1beta2.BackupConditionFailed); c != nil && c.Status == "True" {
		return c.Reason
	}
	return ""
}

// restoreAndCount restores the snapshot file with etcdutl, starts an etcd on the restored data
// directory and returns how many keys it holds under prefix.
func restoreAndCount(t testing.TB, file, prefix string) int64 {
	t.Helper()
	restored := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(snapshottest.Bin(t, "etcdutl"), "snapshot", "restore", file, "--data-dir", restored).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore %s: %v\n%s", file, err, out)
	}
	e := snapshottest.StartEtcd(t, restored)
	defer e.Stop()
	return countKeys(t, e.Client(t), prefix)
}
