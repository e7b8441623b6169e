package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// evictMember evicts the pod of a member on a volume whose spec is out of date, through the
// eviction API so that the cluster's PodDisruptionBudget (and any other) is honoured; the pod
// is then recreated on its volume with the current spec. The pod is read again around the
// cache and evicted only if it is still the one observed (UID precondition) and controlled by
// c. It reports false when a disruption budget refused the eviction for now.
func (r *Reconciler) evictMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, observed *corev1.Pod) (bool, error) {
	if observed == nil {
		return true, nil
	}
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(observed), pod); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("getting pod %s of %s: %w", observed.Name, klog.KObj(c), err)
	}
	if pod.UID != observed.UID || !controlledBy(pod, c) {
		return false, notOwned("pod", pod, c)
	}
	if pod.DeletionTimestamp != nil {
		return true, nil
	}
	uid := pod.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := r.SubResource("eviction").Create(ctx, pod, ev)
	switch {
	case apierrors.IsTooManyRequests(err):
		return false, nil
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("evicting pod %s of %s: %w", pod.Name, klog.KObj(c), err)
	}
	return true, nil
}

// recordRecreateVersion records on the volume of the member a downgrade rolls (act.Version set)
// the version its pod comes back on (AnnotationRecreateVersion, which cluster.Next reads), a
// version recorded by an earlier downgrade replaced.
func (r *Reconciler) recordRecreateVersion(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.Action) error {
	pvc := obs.pvcs[act.Pod]
	if act.Version == "" || pvc == nil {
		return nil
	}
	const key = etcdv1beta2.AnnotationRecreateVersion
	switch was := pvc.Annotations[key]; {
	case was == act.Version:
		return nil
	case was != "":
		if err := r.markVolume(ctx, c, pvc.Name, pvc.UID, map[string]string{key: ""}); err != nil {
			return err
		}
	}
	return r.markVolume(ctx, c, pvc.Name, pvc.UID, map[string]string{key: act.Version})
}
