package etcdrestore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The volumes of a cluster replaced in place are its data until the restored cluster is
// verified. Before the old cluster is deleted, each PersistentVolumeClaim it controls is
// retained: the cluster's controller reference is removed and the retained-by (the restore's
// name) and restore-uid (its UID) annotations are added; labels stay. No owner reference takes
// its place: an owner reference is a delete, and deleting an unfinished EtcdRestore (the natural
// way to cancel one) must not take the replaced cluster's only data with it. The new cluster
// (another UID) sees them as foreign and leaves them alone; the restore deletes them once the
// restored cluster is verified, and otherwise they stay until a person deletes them
// (docs/restore.md, "Retained volumes").

// retainVolumes retains the volumes old controls for rs and records all volumes rs retains.
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
		if err := r.markRetained(ctx, pvc, rs, old.UID); err != nil {
			return fmt.Errorf("retaining volume %s of EtcdCluster %s: %w", pvc.Name, old.Name, err)
		}
		r.Recorder.Eventf(pvc, corev1.EventTypeNormal, "Retained", "EtcdRestore %s replaces EtcdCluster %s: this volume is kept, with no owner, until the restored cluster is verified; if the restore fails or is deleted first, it stays", rs.Name, old.Name)
	}
	return r.recordRetained(ctx, rs)
}

// markRetained takes the owner reference to drop (the replaced cluster's, or the previous
// release's to rs) off pvc and annotates it as retained by rs, with an optimistic lock: a volume
// that changed since it was read is looked at again.
func (r *Reconciler) markRetained(ctx context.Context, pvc *corev1.PersistentVolumeClaim, rs *etcdv1beta2.EtcdRestore, drop types.UID) error {
	before := pvc.DeepCopy()
	pvc.OwnerReferences = slices.DeleteFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == drop })
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[AnnotationRetainedBy] = rs.Name
	pvc.Annotations[AnnotationRestoreUID] = string(rs.UID)
	return r.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// retainedBy reports whether rs retains pvc: annotated with its name and UID, or, as the
// previous release retained volumes, annotated with its name and owned by its UID.
func retainedBy(pvc *corev1.PersistentVolumeClaim, rs *etcdv1beta2.EtcdRestore) bool {
	if pvc.Annotations[AnnotationRetainedBy] != rs.Name {
		return false
	}
	if uid, ok := pvc.Annotations[AnnotationRestoreUID]; ok {
		return uid == string(rs.UID)
	}
	return ownedBy(pvc, rs.UID)
}

// retained lists the volumes rs retains.
func (r *Reconciler) retained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) ([]corev1.PersistentVolumeClaim, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("listing retained volumes: %w", err)
	}
	var out []corev1.PersistentVolumeClaim
	for _, pvc := range pvcs.Items {
		if retainedBy(&pvc, rs) {
			out = append(out, pvc)
		}
	}
	slices.SortFunc(out, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// disownRetained takes rs's owner reference off the volumes it retains, as the previous release
// left them (owned by the EtcdRestore, so that deleting it deleted them), and gives them the
// restore-uid annotation instead. Run on every pass of a restore that retains volumes, so that
// an upgrade makes them safe before anyone deletes the restore.
func (r *Reconciler) disownRetained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) error {
	pvcs, err := r.retained(ctx, rs)
	if err != nil {
		return err
	}
	for i := range pvcs {
		pvc := &pvcs[i]
		if !ownedBy(pvc, rs.UID) || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := r.markRetained(ctx, pvc, rs, rs.UID); err != nil {
			return fmt.Errorf("taking EtcdRestore %s's owner reference off retained volume %s: %w", rs.Name, pvc.Name, err)
		}
	}
	return nil
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
// those that nothing else has claimed since (no owner but rs), each with a UID precondition.
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
		claimed := slices.ContainsFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID != rs.UID })
		if claimed { // someone took it over since: theirs now
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
		fmt.Fprintf(&b, ". The replaced cluster's volumes are kept: %s (PersistentVolumeClaims with no owner, annotation %s=%s; deleting this EtcdRestore keeps them: delete them yourself once their data is no longer needed)", strings.Join(vols, ", "), AnnotationRetainedBy, rs.Name)
	}
	return b.String()
}
