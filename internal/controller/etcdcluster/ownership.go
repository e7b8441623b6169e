package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Ownership (docs/etcdcluster.md, "Safety"): the operator observes, changes, deletes and
// counts as members only the pods and volumes whose controller reference carries the
// cluster's UID. Anything else with the cluster's labels is foreign: its name is reserved and
// it is never touched.

// errNotOwned marks an object the cluster needs (a Service, a volume, a pod at a member's
// name, the PodDisruptionBudget) that exists and is controlled by something else.
var errNotOwned = errors.New("not controlled by this EtcdCluster")

// controlledBy reports whether c is obj's controller, by UID.
func controlledBy(obj metav1.Object, c *etcdv1beta2.EtcdCluster) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == c.UID
}

// notOwned is the error for a foreign obj at a name c needs.
func notOwned(kind string, obj metav1.Object, c *etcdv1beta2.EtcdCluster) error {
	owner := "no controller"
	if ref := metav1.GetControllerOf(obj); ref != nil {
		owner = fmt.Sprintf("controller %s %s, UID %s", ref.Kind, ref.Name, ref.UID)
	}
	return fmt.Errorf("%s %s/%s exists and is %w %s (%s): the operator does not adopt, change or delete it; delete or rename it",
		kind, obj.GetNamespace(), obj.GetName(), errNotOwned, klog.KObj(c), owner)
}

// isRestoreRef reports whether ref points at an EtcdRestore.
func isRestoreRef(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == etcdv1beta2.GroupVersion.Group && ref.Kind == "EtcdRestore"
}

// reconcileOwnership makes everything the cluster runs on owned by the cluster alone:
//   - a legacy restore seed (a pod or volume at bootstrap.restore.seedMember with no
//     controller and an owner reference to the EtcdRestore named there, as the previous
//     release made them) is adopted;
//   - an EtcdRestore owner reference on a pod or volume the cluster controls is removed, so
//     that deleting a finished EtcdRestore never garbage-collects a running member.
//
// It reports whether it changed anything; the caller then observes again in a later pass
// (the cache has not seen the change yet).
func (r *Reconciler) reconcileOwnership(ctx context.Context, c *etcdv1beta2.EtcdCluster) (bool, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return false, fmt.Errorf("listing member pods of %s: %w", klog.KObj(c), err)
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return false, fmt.Errorf("listing member volumes of %s: %w", klog.KObj(c), err)
	}
	var objs []client.Object
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	for i := range pvcs.Items {
		objs = append(objs, &pvcs.Items[i])
	}
	changed := false
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if !legacyRetained(c, pvc) {
			continue
		}
		if err := r.disownRetained(ctx, c, pvc); err != nil {
			return changed, err
		}
		changed = true
	}
	for _, obj := range objs {
		adopt := r.legacySeed(c, obj)
		if !adopt && !(controlledBy(obj, c) && hasRestoreRef(obj)) {
			continue
		}
		if err := r.ownAlone(ctx, c, obj, adopt); err != nil {
			return changed, err
		}
		changed = true
		if adopt {
			r.event(c, corev1.EventTypeNormal, "AdoptedSeed", fmt.Sprintf("adopted %s %s of restore %s and removed its owner reference to the EtcdRestore",
				kindOf(obj), obj.GetName(), c.Spec.Bootstrap.Restore.RestoreName))
		}
	}
	return changed, nil
}

// legacySeed reports whether obj is a seed pod or volume the previous release's restore
// operator made for c: at the seed's name, no controller, owned by the named EtcdRestore.
func (r *Reconciler) legacySeed(c *etcdv1beta2.EtcdCluster, obj client.Object) bool {
	b := c.Spec.Bootstrap
	if b == nil || b.Restore == nil || obj.GetName() != b.Restore.SeedMember || metav1.GetControllerOf(obj) != nil ||
		obj.GetDeletionTimestamp() != nil || obj.GetAnnotations()[etcdv1beta2.AnnotationRetainedBy] != "" {
		return false
	}
	for _, ref := range obj.GetOwnerReferences() {
		if isRestoreRef(ref) && ref.Name == b.Restore.RestoreName {
			return true
		}
	}
	return false
}

// legacyRetained reports whether pvc is a volume the previous release's restore operator
// retained for the restore that made c: annotated retained-by with its name, no controller,
// and an owner reference to that EtcdRestore (so that deleting the restore deleted it).
func legacyRetained(c *etcdv1beta2.EtcdCluster, pvc *corev1.PersistentVolumeClaim) bool {
	b := c.Spec.Bootstrap
	if b == nil || b.Restore == nil || b.Restore.RestoreName == "" || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != b.Restore.RestoreName ||
		metav1.GetControllerOf(pvc) != nil || pvc.DeletionTimestamp != nil {
		return false
	}
	return slices.ContainsFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return isRestoreRef(ref) && ref.Name == b.Restore.RestoreName
	})
}

// disownRetained takes the EtcdRestore owner references off a legacyRetained volume and
// records that restore's UID (AnnotationRestoreUID) instead: deleting the EtcdRestore no longer
// deletes it, and releaseRetained still finds it once the restore verified c.
func (r *Reconciler) disownRetained(ctx context.Context, c *etcdv1beta2.EtcdCluster, pvc *corev1.PersistentVolumeClaim) error {
	before := pvc.DeepCopy()
	var keep []metav1.OwnerReference
	for _, ref := range pvc.OwnerReferences {
		if !isRestoreRef(ref) {
			keep = append(keep, ref)
			continue
		}
		if ref.Name == c.Spec.Bootstrap.Restore.RestoreName && pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] == "" {
			pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] = string(ref.UID)
		}
	}
	pvc.OwnerReferences = keep
	if err := r.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("taking the EtcdRestore's owner reference off retained volume %s: %w", pvc.Name, err)
	}
	r.event(c, corev1.EventTypeNormal, "RetainedVolumeDisowned", fmt.Sprintf("Volume %s, retained by restore %s of the previous release, no longer has an owner: deleting the EtcdRestore keeps it", pvc.Name, c.Spec.Bootstrap.Restore.RestoreName))
	return nil
}

func hasRestoreRef(obj metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if isRestoreRef(ref) {
			return true
		}
	}
	return false
}

// ownAlone removes obj's EtcdRestore owner references and, with adopt, makes c its
// controller. The patch carries the resourceVersion read: it applies to the object checked.
func (r *Reconciler) ownAlone(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj client.Object, adopt bool) error {
	before := obj.DeepCopyObject().(client.Object)
	var keep []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if !isRestoreRef(ref) {
			keep = append(keep, ref)
		}
	}
	obj.SetOwnerReferences(keep)
	if adopt {
		if err := controllerutil.SetControllerReference(c, obj, r.Scheme()); err != nil {
			return fmt.Errorf("owning %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
	}
	if err := r.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("taking sole ownership of %s %s of %s: %w", kindOf(obj), obj.GetName(), klog.KObj(c), err)
	}
	return nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "pod"
	case *corev1.PersistentVolumeClaim:
		return "volume"
	}
	return fmt.Sprintf("%T", obj)
}
