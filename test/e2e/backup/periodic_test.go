//go:build e2e

package backup

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPeriodicBackupAcrossRevisionDigits runs the coreos periodic form (backupPolicy
// backupIntervalInSecond 3, maxBackups 2) through the deployed operator while the revision
// crosses 99 -> 100 and 999 -> 1000, where a plain lexical sort of unpadded revisions would
// keep the wrong objects: the bucket ends with exactly the two newest backups, the newest at
// the final revision and the one status.location names.
func TestPeriodicBackupAcrossRevisionDigits(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeGCS)
	ns := f.CreateNamespace(t, "backup-periodic")
	bucket.CreateSecret(t, f, ns, "creds") // before the pod: see secretsFirst
	member := singleMember(t, f, ns)
	cli := f.EtcdClient(t, member)
	putKeys(t, cli, "/a/", 96, 16, 1, 1) // revision 97

	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "periodic"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{member},
			StorageType:   bucket.Type,
			BackupSource:  bucket.Source("db/etcd.backup", "creds"),
			BackupPolicy:  &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3, MaxBackups: 2},
		},
	})
	start := time.Now()

	// waitRevision waits for a successful periodic backup at a revision of at least rev.
	var b *etcdv1beta2.EtcdBackup
	waitRevision := func(rev int64) {
		t.Helper()
		framework.Eventually(t, time.Minute, fmt.Sprintf("a periodic backup at revision >= %d", rev), func(ctx context.Context) (bool, error) {
			var err error
			if b, err = getBackup(ctx, f, ns, "periodic"); err != nil {
				return false, err
			}
			return b.Status.Succeeded && b.Status.EtcdRevision >= rev, fmt.Errorf("succeeded %t at revision %d, reason %q",
				b.Status.Succeeded, b.Status.EtcdRevision, b.Status.Reason)
		})
	}
	var revs []int64
	for _, w := range []struct {
		writes int
		rev    int64
	}{{0, 97}, {3, 100}, {2, 102}, {900, 1002}, {5, 1007}} {
		putKeys(t, cli, fmt.Sprintf("/w%d/", w.rev), w.writes, 16, 1, 4) // one revision per key
		waitRevision(w.rev)
		revs = append(revs, b.Status.EtcdRevision)
	}
	if revs[len(revs)-1] != 1007 {
		t.Fatalf("backups at revisions %v, want the last at 1007 (writes from elsewhere?)", revs)
	}

	_, newestKey, _ := strings.Cut(b.Status.Location, bucket.Name+"/")
	var keys []string
	framework.Eventually(t, 30*time.Second, "maxBackups 2 applied", func(ctx context.Context) (bool, error) {
		keys = bucket.Keys(t, "db/")
		return len(keys) == 2 && keys[1] == newestKey, fmt.Errorf("bucket holds %v, newest backup %s", keys, newestKey)
	})
	if rev := keyRevision(t, keys[0]); rev < 1002 {
		t.Fatalf("bucket holds %v: the older object is at revision %d, want >= 1002", keys, rev)
	}
	if rev := keyRevision(t, keys[1]); rev != 1007 {
		t.Fatalf("bucket holds %v: the newer object is at revision %d, want 1007", keys, rev)
	}
	t.Logf("backups at revisions %v in %s; kept %v", revs, time.Since(start).Round(time.Millisecond), keys)
}

// keyRevision parses the revision of a backup object key (either key format).
func keyRevision(t testing.TB, key string) int64 {
	t.Helper()
	_, info, ok := snapshot.SplitKey(key)
	if !ok {
		t.Fatalf("object key %q is not a backup key", key)
	}
	return info.Revision
}
