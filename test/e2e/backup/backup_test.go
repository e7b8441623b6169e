//go:build e2e

// Package backup runs the backup operator as deployed on the cluster against etcd pods and the
// object stores that hack/e2e.sh runs on the node's bridge address, where pods reach them
// (framework.ObjectStores).
package backup

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const keys = 2000

// TestBackupEtcdPodToMinIO: an EtcdBackup by etcdEndpoints of a 1-member etcd pod completes
// through the deployed backup operator; the object in MinIO has the status's sha256 and
// restores with etcdutl into a member holding every key.
func TestBackupEtcdPodToMinIO(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	ctx := t.Context()

	ns := f.CreateNamespace(t, "backup")
	bucket.CreateSecret(t, f, ns, "aws") // before the pod: see secretsFirst
	f.Create(t, framework.HeadlessService(ns, "db", map[string]string{"app": "backup-e2e"}, 2379))
	f.Create(t, framework.SingleEtcdPod(ns, "db-0", "db", map[string]string{"app": "backup-e2e"},
		fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))))
	f.WaitForPodReady(t, ns, "db-0", 2*time.Minute)
	member := fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{member}, DialTimeout: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(f.DialTCP)}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	snapshottest.Put(t, cli, "/e2e/", keys, 256)

	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{member},
			StorageType:   bucket.Type,
			BackupSource:  bucket.Source("etcd.backup", "aws"),
		},
	})
	b := &etcdv1beta2.EtcdBackup{}
	framework.Eventually(t, 3*time.Minute, "EtcdBackup Completed", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "once"}, b); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			return false, fmt.Errorf("backup failed: %s", b.Status.Reason)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseCompleted, nil
	})

	file := filepath.Join(t.TempDir(), "snapshot.db")
	if sum, n := bucket.Download(t, "etcd.backup", file); sum != b.Status.SHA256 || n != b.Status.Size {
		t.Fatalf("object sha256/size %s/%d, status %s/%d", sum, n, b.Status.SHA256, b.Status.Size)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command(snapshottest.Bin(t, "etcdutl"), "snapshot", "restore", file, "--data-dir", restored).CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	e := snapshottest.StartEtcd(t, restored)
	resp, err := e.Client(t).Get(ctx, "/e2e/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != keys {
		t.Fatalf("restored member holds %v keys (err %v), want %d", resp, err, keys)
	}
	t.Logf("backup of %s: %d bytes at revision %d in %s", member, b.Status.Size, b.Status.EtcdRevision, b.Status.Duration.Duration)
}
