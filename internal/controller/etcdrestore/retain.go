package etcdrestore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The volumes of a cluster replaced in place are its data until the restored cluster is
// verified. The etcd operator retains them for the restore (controller reference removed,
// retained-by and restore-uid annotations added, no owner) when replace marks the cluster, and
// deletes them when complete marks the restored cluster verified (release-retained). This
// operator only lists them (status.retainedVolumes, failure messages): it has no write access
// to volumes (docs/restore.md, "Retained volumes").

// retainedBy reports whether rs retains pvc: annotated with its name and UID, or, as the
// previous release retained volumes, annotated with its name and owned by its UID.
func retainedBy(pvc *corev1.PersistentVolumeClaim, rs *etcdv1beta2.EtcdRestore) bool {
	if pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != rs.Name {
		return false
	}
	if uid, ok := pvc.Annotations[etcdv1beta2.AnnotationRestoreUID]; ok {
		return uid == string(rs.UID)
	}
	return ownedBy(pvc, rs.UID)
}

// retained lists the volumes rs retains; one being deleted (released) no longer counts.
func (r *Reconciler) retained(ctx context.Context, rs *etcdv1beta2.EtcdRestore) ([]corev1.PersistentVolumeClaim, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("listing retained volumes: %w", err)
	}
	var out []corev1.PersistentVolumeClaim
	for _, pvc := range pvcs.Items {
		if retainedBy(&pvc, rs) && pvc.DeletionTimestamp == nil {
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

// releaseRetained asks the etcd operator, once the restored cluster c is verified, to delete the
// volumes rs retains (AnnotationReleaseRetained on c), and records those still there. It
// reports whether any is left.
func (r *Reconciler) releaseRetained(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) (bool, error) {
	if c.Annotations[etcdv1beta2.AnnotationReleaseRetained] != string(rs.UID) {
		if err := r.annotate(ctx, c, map[string]string{etcdv1beta2.AnnotationReleaseRetained: string(rs.UID)}); err != nil {
			return true, err
		}
		r.Recorder.Eventf(rs, corev1.EventTypeNormal, "ReleasingRetainedVolumes", "The restored cluster is verified: the etcd operator deletes the replaced cluster's volumes %s", strings.Join(rs.Status.RetainedVolumes, ", "))
	}
	if err := r.recordRetained(ctx, rs); err != nil {
		return true, err
	}
	return len(rs.Status.RetainedVolumes) > 0, nil
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
		fmt.Fprintf(&b, ". The replaced cluster's volumes are kept: %s (PersistentVolumeClaims with no owner, annotation %s=%s; deleting this EtcdRestore keeps them: delete them yourself once their data is no longer needed)", strings.Join(vols, ", "), etcdv1beta2.AnnotationRetainedBy, rs.Name)
	}
	return b.String()
}
