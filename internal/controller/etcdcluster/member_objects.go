package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func usesPVC(c *etcdv1beta2.EtcdCluster) bool {
	return c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil
}

// createMemberPod creates the data volume (if the cluster uses them) and the pod of a member.
// AlreadyExists is success when c controls the object (a previous pass got there first); an
// object of that name controlled by anything else is never used: errNotOwned.
func (r *Reconciler) createMemberPod(ctx context.Context, c *etcdv1beta2.EtcdCluster, name, version, state, initial string) error {
	return r.createMember(ctx, c, member.NewPod(c, name, version, state, initial))
}

// createMember creates the data volume (if the cluster uses them) and pod, controlled by c, of
// the member whose pod is pod.
func (r *Reconciler) createMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, pod *corev1.Pod) error {
	if usesPVC(c) {
		pvc := member.NewPVC(c, pod.Name)
		if err := controllerutil.SetControllerReference(c, pvc, r.Scheme()); err != nil {
			return fmt.Errorf("owning volume %s: %w", pod.Name, err)
		}
		if err := r.createOwned(ctx, c, pvc, &corev1.PersistentVolumeClaim{}, "volume"); err != nil {
			return err
		}
	}
	if err := controllerutil.SetControllerReference(c, pod, r.Scheme()); err != nil {
		return fmt.Errorf("owning pod %s: %w", pod.Name, err)
	}
	return r.createOwned(ctx, c, pod, &corev1.Pod{}, "pod")
}

// createOwned creates obj; if an object of its name exists, it reads it (around the cache)
// into existing and accepts it only when c controls it.
func (r *Reconciler) createOwned(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj, existing client.Object, kind string) error {
	err := r.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
		// Admission (Pod Security, quota, a LimitRange, a webhook): a person must change the
		// namespace's policy or the cluster's spec. Said in a condition, re-checked every
		// requeueBlocked, not retried with backoff.
		return reason.Errorf(etcdv1beta2.ReasonMemberRefused, "the API server refused %s %s: %v; nothing more is done for the cluster until it is admitted (change the namespace's Pod Security level, quota or webhook, or the cluster's pod policy)", kind, obj.GetName(), err)
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s of %s: %w", kind, obj.GetName(), klog.KObj(c), err)
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("getting existing %s %s of %s: %w", kind, obj.GetName(), klog.KObj(c), err)
	}
	if !controlledBy(existing, c) {
		return notOwned(kind, existing, c)
	}
	return nil
}

// volumeGoing reports whether the data volume of member name is gone or being deleted, read
// around the cache: a pod deleted together with its volume must not be recreated on it (the
// pod would hold the volume's deletion, and the member's data is being thrown away anyway).
// A volume of that name that c does not control is errNotOwned: never mounted.
func (r *Reconciler) volumeGoing(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) (bool, error) {
	if !usesPVC(c) {
		return false, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pvc)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting volume %s of %s: %w", name, klog.KObj(c), err)
	}
	if !controlledBy(pvc, c) {
		return false, notOwned("volume", pvc, c)
	}
	return pvc.DeletionTimestamp != nil, nil
}

// deleteMember deletes a member's pod and, with withVolume, its data volume: only the ones
// this pass observed as controlled by c, re-read and checked again, deleted with their UID and
// resourceVersion as preconditions.
func (r *Reconciler) deleteMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, name string, withVolume bool) error {
	if p, ok := obs.pods[name]; ok {
		if err := r.deleteOwned(ctx, c, p, &corev1.Pod{}, "pod"); err != nil {
			return err
		}
	}
	if !withVolume || !usesPVC(c) {
		return nil
	}
	if pvc, ok := obs.pvcs[name]; ok {
		return r.deleteOwned(ctx, c, pvc, &corev1.PersistentVolumeClaim{}, "volume")
	}
	return nil
}

// deleteOwned deletes the object observed, after reading it again (into fresh) and checking
// that it is the same object (UID) and still controlled by c. Gone already is success.
func (r *Reconciler) deleteOwned(ctx context.Context, c *etcdv1beta2.EtcdCluster, observed, fresh client.Object, kind string) error {
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(observed), fresh)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting %s %s of %s: %w", kind, observed.GetName(), klog.KObj(c), err)
	}
	if fresh.GetUID() != observed.GetUID() || !controlledBy(fresh, c) {
		return notOwned(kind, fresh, c)
	}
	if fresh.GetDeletionTimestamp() != nil {
		return nil
	}
	uid, rv := fresh.GetUID(), fresh.GetResourceVersion()
	if err := r.Delete(ctx, fresh, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s of %s: %w", kind, observed.GetName(), klog.KObj(c), err)
	}
	return nil
}
