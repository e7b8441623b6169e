package etcdrestore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The volumes of a cluster replaced in place are its data until the restored cluster is
// verified. Before the old cluster is deleted, each PersistentVolumeClaim it controls is handed
// to the EtcdRestore: the cluster's controller reference is removed, an owner reference to the
// EtcdRestore and the retained-by annotation are added (labels stay). The new cluster (another
// UID) sees them as foreign and leaves them alone; the restore deletes them once the restored
// cluster is verified, and keeps them, listed in its failure message, if it fails.

// retainVolumes hands the volumes old controls to rs and records all volumes rs retains.
func (r *Reconciler) retainVolumes(ctx context.Context, rs *etcdv1beta2.EtcdRestore, old *etcdv1beta2.EtcdCluster) error {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(rs.Namespace)); err != nil {
		return fmt.Errorf("listing volumes of EtcdCluster %s: %w", old.Name, err)
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if !controlledBy(pvc, old.UID) || pvc.DeletionTimestamp != nil {
			continue
		}
		before := pvc.DeepCopy()
		pvc.OwnerReferences = slices.DeleteFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == old.UID })
		pvc.OwnerReferences = append(pvc.OwnerReferences, restoreRef(rs))
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[AnnotationRetainedBy] = rs.Name
		// Optimistic lock: a volume that changed since it was read is looked at again.
		if err := r.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("retaining volume %s of EtcdCluster %s: %w", pvc.Name, old.Name, err)
		}
	}
	return r.recordRetained(ctx, rs)
}

// retained lists the volumes rs retains: owned by rs's UID and annotated with its name.
func (r *Reconciler) retained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) ([]corev1.PersistentVolumeClaim, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("listing retained volumes: %w", err)
	}
	var out []corev1.PersistentVolumeClaim
	for _, pvc := range pvcs.Items {
		if pvc.Annotations[AnnotationRetainedBy] == rs.Name && ownedBy(&pvc, rs.UID) {
			out = append(out, pvc)
		}
	}
	slices.SortFunc(out, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// recordRetained writes the names of the volumes rs retains into its status.
func (r *Reconciler) recordRetained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) error {
	pvcs, err := r.retained(ctx, rs)
	if err != nil {
		return err
	}
	rs.Status.RetainedVolumes = nil
	for _, pvc := range pvcs {
		rs.Status.RetainedVolumes = append(rs.Status.RetainedVolumes, pvc.Name)
	}
	return nil
}

// releaseRetained deletes the volumes rs retains, once the restored cluster is verified: only
// those still owned by rs and controlled by nothing else, each with a UID precondition.
func (r *Reconciler) releaseRetained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) error {
	pvcs, err := r.retained(ctx, rs)
	if err != nil {
		return err
	}
	var deleted, kept []string
	for i := range pvcs {
		pvc := &pvcs[i]
		if pvc.DeletionTimestamp != nil {
			continue
		}
		if metav1.GetControllerOf(pvc) != nil { // someone took it over since: theirs now
			kept = append(kept, pvc.Name)
			continue
		}
		uid := pvc.UID
		if err := r.Delete(ctx, pvc, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting retained volume %s: %w", pvc.Name, err)
		}
		deleted = append(deleted, pvc.Name)
	}
	rs.Status.RetainedVolumes = kept
	if len(deleted) > 0 {
		r.Recorder.Eventf(rs, corev1.EventTypeNormal, "RetainedVolumesDeleted", "The restored cluster is verified: deleted the replaced cluster's volumes %s", strings.Join(deleted, ", "))
	}
	return nil
}

// leftBehind says, for a restore that fails after it changed a cluster, what it left and how to
// retry; "" when it changed nothing.
func (r *Reconciler) leftBehind(ctx context.Context, rs *etcdv1beta2.EtcdRestore) string {
	name := rs.Spec.EtcdCluster.Name
	var b strings.Builder
	switch _, replaced := rs.Annotations[AnnotationClusterTemplate]; {
	case replaced:
		fmt.Fprintf(&b, ". EtcdCluster %s was replaced by a cluster made for this restore, which holds no verified data. To retry, fix the cause and create a new EtcdRestore with etcdCluster.name %s and no clusterTemplate: it replaces that cluster", name, name)
	case rs.Status.SeedMember != "":
		fmt.Fprintf(&b, ". EtcdCluster %s was created for this restore. To retry, fix the cause, delete EtcdCluster %s (a drill's TTL does it) and create a new EtcdRestore", name, name)
	default:
		return ""
	}
	if err := r.recordRetained(ctx, rs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing retained volumes for the failure message", "restore", klog.KObj(rs))
	}
	if vols := rs.Status.RetainedVolumes; len(vols) > 0 {
		fmt.Fprintf(&b, ". The replaced cluster's volumes are kept: %s (PersistentVolumeClaims owned by this EtcdRestore, annotation %s=%s; deleting this EtcdRestore deletes them)", strings.Join(vols, ", "), AnnotationRetainedBy, rs.Name)
	}
	return b.String()
}
