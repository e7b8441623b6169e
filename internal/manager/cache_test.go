package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestCacheSelectsMemberObjects: the cache's selector matches what the operators create (member
// pods, restore seeds and their volumes carry member.SelectorLabels), so a filtered cache never
// hides one of them.
func TestCacheSelectsMemberObjects(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: etcdv1beta2.ClusterSpec{Size: 1,
		Pod: &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}}}
	opts := cacheOptions(nil, nil)
	for obj, by := range opts.ByObject {
		var l map[string]string
		switch obj.(type) {
		case *corev1.PersistentVolumeClaim:
			l = member.NewPVC(c, "c-0").Labels
		default:
			l = member.NewPod(c, "c-0", "3.6.16", "new", "").Labels
		}
		if !by.Label.Matches(labels.Set(l)) {
			t.Errorf("the cache's selector %s for %T does not match the operators' labels %v", by.Label, obj, l)
		}
	}
	if opts.DefaultTransform == nil {
		t.Error("managedFields are cached")
	}
}
