//go:build e2e

package restore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestAuth: a cluster with spec.auth on the local cluster (issue 18 item 4).
//  1. It is created with one member; once Available the operator turns etcd authentication on
//     with the Secret's root password: an anonymous write is refused, root's is served.
//  2. It grows to 3 members under authentication (learners added and promoted as root).
//  3. An EtcdBackup naming the cluster takes a verified snapshot with those credentials.
//  4. An EtcdRestore into a new name from that backup succeeds with every member verified;
//     the copy holds the same keyspace and keeps authentication on with the same root password.
func TestAuth(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "auth")
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	password := hex.EncodeToString(raw)
	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-root"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("root"), "password": []byte(password)}})

	db := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: etcdv1beta2.ClusterSpec{Size: 1, Auth: &etcdv1beta2.AuthPolicy{SecretName: "etcd-root"}}}
	f.Create(t, db)
	f.WaitClusterAvailable(t, ns, "db", 1, 5*time.Minute)
	waitAuthOn(t, f, ns, "db")
	root := f.EtcdClientAs(t, "root", password, framework.ClientEndpoint(ns, "db"))

	// 2. Membership changes under authentication.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := f.GetCluster(t.Context(), ns, "db")
		if err != nil {
			return err
		}
		c.Spec.Size = 3
		return f.Client.Update(t.Context(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	const n = 500
	framework.PutDataset(t, root, prefix, 0, n)
	want := framework.KeyspaceSHA256(t, root, prefix)

	// 3. Backup with the cluster's credentials.
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-backup"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("db/etcd.backup", "aws")},
	})
	backup := f.WaitBackupCompleted(t, ns, "db-backup", 3*time.Minute)
	t.Logf("backup of the authenticated cluster: %d bytes at revision %d", backup.Status.Size, backup.Status.EtcdRevision)

	// 4. Restore into a new name; the restore verifies every member as root.
	f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "db-copy"}, ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "db"},
		BackupRef: &etcdv1beta2.LocalObjectReference{Name: "db-backup"},
	}})
	rs := f.WaitRestoreSucceeded(t, ns, "copy", 8*time.Minute)
	if v := rs.Status.Verification; v == nil || !v.Passed || v.MembersVerified != 3 || v.Keys < n {
		t.Fatalf("verification %+v", rs.Status.Verification)
	}
	t.Logf("restore into a new name: RTO %s, verification %+v", rs.Status.Duration.Duration, *rs.Status.Verification)
	waitAuthOn(t, f, ns, "db-copy")
	copyRoot := f.EtcdClientAs(t, "root", password, framework.ClientEndpoint(ns, "db-copy"))
	if got := framework.KeyspaceSHA256(t, copyRoot, prefix); got != want {
		t.Fatalf("the restored copy's keyspace %s differs from the original's %s", got, want)
	}
}

// waitAuthOn waits until the cluster refuses an anonymous write with an auth error.
func waitAuthOn(t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	anon := f.EtcdClient(t, framework.ClientEndpoint(ns, name))
	framework.Eventually(t, 2*time.Minute, fmt.Sprintf("%s/%s refuses anonymous writes", ns, name), func(ctx context.Context) (bool, error) {
		_, err := anon.Put(ctx, "/auth-probe", "anonymous", clientv3.WithPrevKV())
		switch {
		case err == nil:
			return false, errors.New("an anonymous write was accepted")
		case etcdaccess.IsAuthError(err):
			return true, nil
		}
		return false, err
	})
}
