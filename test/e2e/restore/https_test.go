//go:build e2e

package restore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPrivateCAObjectStore: an on-prem S3 store (MinIO) serving HTTPS with a certificate of a
// CA made in the test. A backup without endpointCA is refused for the unknown authority; with
// endpointCA naming a Secret that holds the CA, the backup operator stores a verified backup,
// and a restore from it (the restore operator's verification and the seed pod's download, both
// with the CA from the same Secret) brings up a cluster with the same keyspace.
func TestPrivateCAObjectStore(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	tlsStores, ca := framework.ObjectStores(t).TLSMinIO(t)
	ns := f.CreateNamespace(t, "private-ca")

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	f.WaitClusterAvailable(t, ns, "db", 1, 3*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, 2000)
	want := framework.KeyspaceSHA256(t, cli, prefix)

	bucket := tlsStores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minio-ca"}, Data: map[string][]byte{"ca.crt": ca}})
	backup := func(name string, withCA bool) *etcdv1beta2.EtcdBackup {
		src := bucket.Source("db/"+name, "aws")
		if withCA {
			src.S3.EndpointCA = &etcdv1beta2.SecretKeySelector{Name: "minio-ca"}
		}
		return &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: src,
			},
		}
	}

	// Without the CA: the public roots do not cover the store's certificate.
	f.Create(t, backup("without-ca", false))
	framework.Eventually(t, 2*time.Minute, "backup without the CA refused for the certificate", func(ctx context.Context) (bool, error) {
		b := &etcdv1beta2.EtcdBackup{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "without-ca"}, b); err != nil {
			return false, err
		}
		if b.Status.Succeeded {
			return false, fmt.Errorf("the backup succeeded against an endpoint whose CA it was not given")
		}
		return strings.Contains(b.Status.Reason, "certificate"), fmt.Errorf("status reason %q", b.Status.Reason)
	})
	if keys := bucket.Keys(t, "db/without-ca"); len(keys) != 0 {
		t.Fatalf("objects written without the CA: %v", keys)
	}

	// With the CA: backup, then restore into a new name from it.
	f.Create(t, backup("with-ca", true))
	b := f.WaitBackupCompleted(t, ns, "with-ca", 3*time.Minute)
	t.Logf("backup over HTTPS with the private CA: %s, %d bytes", b.Status.Location, b.Status.Size)
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:     etcdv1beta2.EtcdClusterRef{Name: "restored"},
			ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "db"},
			BackupRef:       &etcdv1beta2.LocalObjectReference{Name: "with-ca"},
		},
	})
	rs := f.WaitRestoreSucceeded(t, ns, "restored", 5*time.Minute)
	if v := rs.Status.Verification; v == nil || !v.Passed || v.MembersVerified != 1 {
		t.Fatalf("verification %+v", rs.Status.Verification)
	}
	restored := f.EtcdClient(t, framework.ClientEndpoint(ns, "restored"))
	if got := framework.KeyspaceSHA256(t, restored, prefix); got != want {
		t.Fatal("the restored keyspace differs from the backed-up one")
	}
	t.Logf("restore over HTTPS with the private CA: RTO %s", rs.Status.Duration.Duration)
}
