//go:build e2e

package backup

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	clusterKeys   = 100_000
	clusterPrefix = "/e2e/"
)

// TestBackup3MemberClusterToEveryProvider is the acceptance of issue 6 at scale: a 3-member
// EtcdCluster made by the etcd-operator holds 100k keys; one one-shot EtcdBackup per provider
// (MinIO, fake-gcs-server, Azurite), referring to the cluster by name, completes through the
// deployed backup operator. For each, the object downloaded on the host has status.sha256 and
// status.size, and etcdutl restores it into a member that holds all 100k keys.
func TestBackup3MemberClusterToEveryProvider(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "backup-providers")
	buckets := map[etcdv1beta2.BackupStorageType]*framework.Bucket{}
	for _, typ := range framework.StorageTypes {
		buckets[typ] = stores.NewBucket(t, typ)
		buckets[typ].CreateSecret(t, f, ns, secretName(typ)) // long before the backups: see secretsFirst
	}

	start := time.Now()
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3}})
	f.WaitClusterAvailable(t, ns, "db", 3, 4*time.Minute)
	t.Logf("3-member cluster Available in %s", time.Since(start).Round(time.Millisecond))

	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	start = time.Now()
	putKeys(t, cli, clusterPrefix, clusterKeys, 100, 128, 8)
	if n := countKeys(t, cli, clusterPrefix); n != clusterKeys {
		t.Fatalf("cluster holds %d keys under %s after writing, want %d", n, clusterPrefix, clusterKeys)
	}
	t.Logf("wrote %d keys in %s", clusterKeys, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	for _, typ := range framework.StorageTypes {
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupName(typ)},
			Spec: etcdv1beta2.BackupSpec{
				EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: "db"},
				StorageType:  typ,
				BackupSource: buckets[typ].Source("db/etcd.backup", secretName(typ)),
			},
		})
	}
	for _, typ := range framework.StorageTypes {
		t.Run(string(typ), func(t *testing.T) {
			b := waitCompleted(t, f, ns, backupName(typ), 3*time.Minute)
			bucket := buckets[typ]
			file := filepath.Join(t.TempDir(), "snapshot.db")
			sum, size := bucket.Download(t, "db/etcd.backup", file)
			if sum != b.Status.SHA256 || size != b.Status.Size {
				t.Fatalf("object %s/db/etcd.backup: sha256 %s, %d bytes; status.sha256 %s, status.size %d",
					bucket.Name, sum, size, b.Status.SHA256, b.Status.Size)
			}
			if want := fmt.Sprintf("%s://%s/db/etcd.backup", typ, bucket.Name); b.Status.Location != want {
				t.Errorf("status.location %q, want %q", b.Status.Location, want)
			}
			if n := restoreAndCount(t, file, clusterPrefix); n != clusterKeys {
				t.Fatalf("member restored from the %s object holds %d keys under %s, want %d", typ, n, clusterPrefix, clusterKeys)
			}
			t.Logf("%s: %d bytes at revision %d from %s in %s (all three created at +0, completed at +%s)", typ,
				b.Status.Size, b.Status.EtcdRevision, b.Status.Member, b.Status.Duration.Duration,
				b.Status.CompletionTime.Sub(start).Round(time.Millisecond))
		})
	}
}

func backupName(typ etcdv1beta2.BackupStorageType) string {
	return "to-" + strings.ToLower(string(typ))
}

func secretName(typ etcdv1beta2.BackupStorageType) string {
	return "creds-" + strings.ToLower(string(typ))
}
