package restoreboot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The volumes of a cluster replaced in place are its data until the restored cluster is
// verified, and only the etcd operator changes or deletes them (the restore operator writes
// only EtcdClusters):
//
//	AnnotationReplacedBy on the old cluster      -> RetainVolumes: each volume it controls
//	                                                loses that controller reference and gets
//	                                                AnnotationRetainedBy / AnnotationRestoreUID;
//	                                                the restore waits for it before it deletes
//	                                                the cluster, so the garbage collector never
//	                                                takes them; then the etcd operator stops
//	                                                the members of a cluster on volumes at once
//	                                                and holds it until it is deleted
//	that EtcdRestore gone, deleted or failed     -> CancelMark, then ReadoptVolumes: the
//	while the old cluster still exists              replacement is off, the cluster gets its
//	                                                volumes back and runs on
//	AnnotationReleaseRetained on the new cluster -> ReleaseVolumes, once its restore verified
//	                                                it: the volumes retained for it are deleted
//	the old cluster deleted, its pods stuck       -> ForceDeleteStuck, only with the person's
//	                                                AnnotationForceDeleteStuckPods
//
// Nothing else deletes a retained volume: if the restore fails or its EtcdRestore is deleted
// first, they stay (docs/restore.md, "Retained volumes").

// cancelledMark prefixes the UID in AnnotationReplacedBy once the etcd operator found the
// EtcdRestore that set it gone, being deleted, of another UID or failed while the cluster still
// existed: that replacement is off. The restore operator deletes a cluster only while the mark
// is its own UID, read fresh, with the cluster's resourceVersion as a precondition; the mark is
// cancelled before any volume is given back, so a cluster getting its volumes back is never
// deleted with them.
const cancelledMark = "cancelled:"

// Replacing returns the UID and name (empty in marks of early releases) of the EtcdRestore
// whose mark on c stands: c is to be replaced in place by it.
func Replacing(c *etcdv1beta2.EtcdCluster) (uid, name string, ok bool) {
	uid, name = c.Annotations[etcdv1beta2.AnnotationReplacedBy], c.Annotations[etcdv1beta2.AnnotationReplacedByName]
	if uid == "" || strings.HasPrefix(uid, cancelledMark) {
		return "", "", false
	}
	return uid, name, true
}

// Cancelled returns the UID of the EtcdRestore whose mark on c was cancelled (CancelMark).
func Cancelled(c *etcdv1beta2.EtcdCluster) (uid string, ok bool) {
	return strings.CutPrefix(c.Annotations[etcdv1beta2.AnnotationReplacedBy], cancelledMark)
}

// CancelMark cancels the standing mark on c (see cancelledMark), with an optimistic lock;
// c is updated.
func CancelMark(ctx context.Context, w client.Writer, c *etcdv1beta2.EtcdCluster) error {
	uid, _, ok := Replacing(c)
	if !ok {
		return nil
	}
	before := c.DeepCopy()
	c.Annotations[etcdv1beta2.AnnotationReplacedBy] = cancelledMark + uid
	if err := w.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("cancelling the replacement of %s: %w", klog.KObj(c), err)
	}
	return nil
}

// ReadoptVolumes gives c back, once the mark of the EtcdRestore uid on it is cancelled, the
// volumes retained for that restore: labelled for c, owned by nothing, AnnotationRestoreUID
// equal to uid. Each gets c's controller reference again and loses AnnotationRetainedBy and
// AnnotationRestoreUID, patched with an optimistic lock. It lists around the cache (r); then
// the marks go from c (the force-delete opt-in with them). It returns the volumes given back.
func ReadoptVolumes(ctx context.Context, w client.Writer, r client.Reader, c *etcdv1beta2.EtcdCluster, uid string) ([]string, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the volumes retained from %s: %w", klog.KObj(c), err)
	}
	var back []string
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if pvc.DeletionTimestamp != nil || metav1.GetControllerOf(pvc) != nil || pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != uid {
			continue
		}
		before := pvc.DeepCopy()
		pvc.OwnerReferences = append(pvc.OwnerReferences, *metav1.NewControllerRef(c, etcdv1beta2.GroupVersion.WithKind("EtcdCluster")))
		delete(pvc.Annotations, etcdv1beta2.AnnotationRetainedBy)
		delete(pvc.Annotations, etcdv1beta2.AnnotationRestoreUID)
		if err := w.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return back, fmt.Errorf("giving volume %s back to %s: %w", pvc.Name, klog.KObj(c), err)
		}
		back = append(back, pvc.Name)
	}
	before := c.DeepCopy()
	for _, k := range []string{etcdv1beta2.AnnotationReplacedBy, etcdv1beta2.AnnotationReplacedByName, etcdv1beta2.AnnotationForceDeleteStuckPods} {
		delete(c.Annotations, k)
	}
	if err := w.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return back, fmt.Errorf("removing the cancelled replacement's marks from %s: %w", klog.KObj(c), err)
	}
	return back, nil
}

// RetainVolumes retains, for the EtcdRestore that c's AnnotationReplacedBy and
// AnnotationReplacedByName name, every volume c controls: c's controller reference removed,
// AnnotationRetainedBy and AnnotationRestoreUID added (labels stay), each patched with an
// optimistic lock. It lists around the cache (r) and returns the volumes it retained now.
func RetainVolumes(ctx context.Context, w client.Writer, r client.Reader, c *etcdv1beta2.EtcdCluster) ([]*corev1.PersistentVolumeClaim, error) {
	uid, name, ok := Replacing(c)
	if !ok || name == "" {
		return nil, nil
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the volumes of the replaced %s: %w", klog.KObj(c), err)
	}
	var retained []*corev1.PersistentVolumeClaim
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if !metav1.IsControlledBy(pvc, c) || pvc.DeletionTimestamp != nil {
			continue
		}
		before := pvc.DeepCopy()
		pvc.OwnerReferences = slices.DeleteFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == c.UID })
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] = name
		pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] = uid
		if err := w.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return retained, fmt.Errorf("retaining volume %s of the replaced %s: %w", pvc.Name, klog.KObj(c), err)
		}
		retained = append(retained, pvc)
	}
	return retained, nil
}

// ReleaseVolumes deletes, once the restore that made c verified it (AnnotationReleaseRetained
// names its UID, and c has formed), the volumes retained for that restore: annotated with its
// UID and with the name c's bootstrap.restore.restoreName gives, and owned by nothing (one that
// someone took over since is theirs). Each is deleted with a UID precondition. It returns the
// names deleted.
func ReleaseVolumes(ctx context.Context, w client.Writer, r client.Reader, c *etcdv1beta2.EtcdCluster) ([]string, error) {
	uid := c.Annotations[etcdv1beta2.AnnotationReleaseRetained]
	b := c.Spec.Bootstrap
	if uid == "" || b == nil || b.Restore == nil || b.Restore.RestoreName == "" || c.Status.ClusterID == "" {
		return nil, nil
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the volumes retained for %s: %w", klog.KObj(c), err)
	}
	var deleted []string
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if pvc.DeletionTimestamp != nil || len(pvc.OwnerReferences) > 0 ||
			pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != uid || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != b.Restore.RestoreName {
			continue
		}
		pvcUID := pvc.UID
		if err := w.Delete(ctx, pvc, client.Preconditions{UID: &pvcUID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting volume %s retained for %s: %w", pvc.Name, klog.KObj(c), err)
		}
		deleted = append(deleted, pvc.Name)
	}
	return deleted, nil
}

// StuckAfter is how long past its deletion deadline (its deletion timestamp: the request plus
// its grace period) a pod of a replaced cluster counts as stuck Terminating. A kubelet that runs
// confirms a stop within seconds; one that does not is on a node that is gone or cut off.
const StuckAfter = 30 * time.Second

// ForceDeleteStuck force-deletes (grace period 0), for a deleted cluster c that carries the
// person's AnnotationForceDeleteStuckPods opt-in, the pods among pods that c controls and that
// stay Terminating more than after past their deadline (now), each with a UID precondition.
// It returns the pods it deleted and how long until the next one would count as stuck (0: none
// left to wait for).
func ForceDeleteStuck(ctx context.Context, w client.Writer, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod, now time.Time, after time.Duration) ([]*corev1.Pod, time.Duration, error) {
	if c.Annotations[etcdv1beta2.AnnotationForceDeleteStuckPods] != "true" {
		return nil, 0, nil
	}
	var deleted []*corev1.Pod
	var next time.Duration
	for i := range pods {
		p := &pods[i]
		if !metav1.IsControlledBy(p, c) || p.DeletionTimestamp == nil {
			continue
		}
		if wait := p.DeletionTimestamp.Add(after).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		uid := p.UID
		if err := w.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return deleted, 0, fmt.Errorf("force-deleting stuck pod %s of the replaced %s: %w", p.Name, klog.KObj(c), err)
		}
		deleted = append(deleted, p)
	}
	return deleted, next, nil
}

// ReplacedGracePeriod is how long, in seconds, the member pods of a cluster replaced by an
// in-place restore get to stop. Their data is either on the volumes the restore keeps (etcd is
// crash-safe) or about to be gone with the pods; a graceful etcd stop would only try, for up to
// about 7 s, to hand leadership to members that are stopping too.
const ReplacedGracePeriod = 1

// Stopping reports whether p is being deleted with a grace period of at most
// ReplacedGracePeriod: the etcd operator stops the members of a replaced cluster so, and the
// restore waits for that before it deletes the cluster.
func Stopping(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds <= ReplacedGracePeriod
}

// StopMembers deletes the member pods c controls (by UID, each with a UID precondition) with
// ReplacedGracePeriod, but for those already Stopping. It lists through r and returns c's
// member pods.
func StopMembers(ctx context.Context, w client.Writer, r client.Reader, c *etcdv1beta2.EtcdCluster) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the pods of the replaced %s: %w", klog.KObj(c), err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1.IsControlledBy(p, c) || Stopping(p) {
			continue
		}
		uid := p.UID
		err := w.Delete(ctx, p, client.GracePeriodSeconds(ReplacedGracePeriod), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("stopping pod %s of the replaced %s: %w", p.Name, klog.KObj(c), err)
		}
	}
	return pods.Items, nil
}
