//go:build e2e

package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// OneShotBackup backs cluster up to key in bucket b through an EtcdBackup named
// <cluster>-backup-<n> with the credentials Secret secret, and waits for it to complete.
func (f *Framework) OneShotBackup(t testing.TB, b *Bucket, ns, cluster, key, secret string) *etcdv1beta2.EtcdBackup {
	t.Helper()
	name := cluster + "-backup-" + fmt.Sprint(time.Now().UnixNano()%100000)
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: cluster},
			StorageType:  b.Type,
			BackupSource: b.Source(key, secret),
		},
	})
	return f.WaitBackupCompleted(t, ns, name, 3*time.Minute)
}

// HostPathClass creates a StorageClass name like the local cluster's default (the host-path
// provisioner, immediate binding), deleted at the end of the test.
func (f *Framework) HostPathClass(t testing.TB, name string) *storagev1.StorageClass {
	t.Helper()
	class := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/host-path",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	f.Create(t, class.DeepCopy())
	t.Cleanup(func() {
		_ = f.Client.Delete(context.Background(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return class
}
