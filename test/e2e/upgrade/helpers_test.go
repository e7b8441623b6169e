//go:build e2e && upgrade

package upgrade

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// newCluster is a 3-member cluster on 1Gi volumes of class (nil: the default class).
func newCluster(ns, name string, class *string) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Pod: &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: class,
		}}},
	}
}

// inPlaceRestore creates EtcdRestore name of backup into the existing cluster.
func inPlaceRestore(t *testing.T, f *framework.Framework, ns, name, cluster, backup string) {
	t.Helper()
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: cluster},
			BackupRef:   &etcdv1beta2.LocalObjectReference{Name: backup},
		},
	})
}

// checkKeys fails the test unless the cluster's client Service serves keys [0, n) of the
// dataset under prefix, and nothing else under it.
func checkKeys(t *testing.T, f *framework.Framework, ns, name, prefix string, n int) {
	t.Helper()
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, name))
	if got, diffs := framework.CheckDataset(t, cli, prefix, n); len(diffs) > 0 {
		t.Fatalf("EtcdCluster %s: %d keys under %s, differences: %v", name, got, prefix, diffs)
	}
}

// replaceClass deletes StorageClass class.Name and creates it again as class (its fields are
// immutable), waiting until the old one is gone.
func replaceClass(t *testing.T, f *framework.Framework, class *storagev1.StorageClass) {
	t.Helper()
	if err := f.Client.Delete(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class.Name}}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, "StorageClass "+class.Name+" deleted", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Name: class.Name}, &storagev1.StorageClass{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Errorf("still there: %v", err)
	})
	f.Create(t, class.DeepCopy())
}

// volumes lists the PersistentVolumeClaims of ns, of cluster when it is not empty.
func volumes(ctx context.Context, f *framework.Framework, ns, cluster string) ([]*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	opts := []client.ListOption{client.InNamespace(ns)}
	if cluster != "" {
		opts = append(opts, client.MatchingLabels{"etcd_cluster": cluster})
	}
	if err := f.Client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// memberPods lists the pods of cluster in ns.
func memberPods(ctx context.Context, f *framework.Framework, ns, cluster string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": cluster}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// podUIDs are the member pods of cluster as name -> UID.
func podUIDs(t *testing.T, f *framework.Framework, ns, cluster string) map[string]types.UID {
	t.Helper()
	pods, err := memberPods(t.Context(), f, ns, cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods {
		out[p.Name] = p.UID
	}
	return out
}

// volumeUIDs are the PersistentVolumeClaims of cluster (every one of ns with "") as name -> UID.
func volumeUIDs(t *testing.T, f *framework.Framework, ns, cluster string) map[string]types.UID {
	t.Helper()
	pvcs, err := volumes(t.Context(), f, ns, cluster)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pvcs {
		out[p.Name] = p.UID
	}
	return out
}

// describe prints name -> UID sorted by name.
func describe(m map[string]types.UID) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for _, n := range names {
		s += fmt.Sprintf(" %s=%s", n, m[n])
	}
	return s
}
