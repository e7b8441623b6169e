package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// heldRecheck is how often a cluster held for the restore replacing it looks again whether
// that restore still stands (the etcd operator does not watch EtcdRestores).
const heldRecheck = 5 * time.Second

// holdReplaced carries out the etcd operator's side of an in-place restore for a cluster the
// restore marked (AnnotationReplacedBy) and has not deleted yet:
//   - the mark stands and its EtcdRestore, read around the cache, is there, not being
//     deleted and not failed: c's volumes are retained for it (the restore waits for that);
//     then a cluster on volumes has its member pods stopped at once (restoreboot.ReplacedGracePeriod) and
//     is held, no member step, until the restore deletes it (the restore waits for the stop:
//     the garbage collector would give each pod its own grace period, and the leader about
//     7 s of handing leadership to members that stop too). A cluster whose data lives in its
//     pods (emptyDir) runs on until it is deleted: stopping it before its deletion is certain
//     could lose its only data;
//   - that EtcdRestore is gone, being deleted, of another UID or failed: the replacement is
//     off. The mark is cancelled first (the restore deletes only a cluster its own mark
//     stands on, with a resourceVersion precondition), then c gets its retained volumes back
//     and the marks go (restoreboot.ReadoptVolumes); the pass goes on, and members stopped
//     for the restore are recreated on their volumes.
//
// It reports whether the pass ends here, and when to look again.
func (r *Reconciler) holdReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster) (bool, time.Duration, error) {
	if uid, ok := restoreboot.Cancelled(c); ok {
		name := c.Annotations[etcdv1beta2.AnnotationReplacedByName] // ReadoptVolumes removes it
		back, err := restoreboot.ReadoptVolumes(ctx, r.Client, r.APIReader, c, uid)
		if err != nil {
			return true, 0, err
		}
		r.event(c, corev1.EventTypeWarning, "ReplacementCancelled", fmt.Sprintf("The EtcdRestore that was to replace this cluster in place (%s) is gone, deleted or failed: the cluster runs on with its volumes (%s given back)", name, strings.Join(back, ", ")))
		return true, requeueAfterChange, nil
	}
	uid, name, ok := restoreboot.Replacing(c)
	if !ok || name == "" {
		return false, 0, nil
	}
	rs := &etcdv1beta2.EtcdRestore{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, rs)
	if client.IgnoreNotFound(err) != nil {
		return true, 0, fmt.Errorf("reading EtcdRestore %s, which replaces %s: %w", name, klog.KObj(c), err)
	}
	if err != nil || string(rs.UID) != uid || rs.DeletionTimestamp != nil || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed {
		return true, requeueAfterChange, restoreboot.CancelMark(ctx, r.Client, c)
	}
	if err := r.retainReplaced(ctx, c); err != nil {
		return true, 0, err
	}
	if !usesPVC(c) {
		return false, 0, nil
	}
	if _, err := restoreboot.StopMembers(ctx, r.Client, r.Client, c); err != nil {
		return true, 0, err
	}
	return true, heldRecheck, r.reportHeld(ctx, c, name)
}

// reportHeld records on c, held for the EtcdRestore name, that it serves nothing any more:
// Available False (ReasonReplacedInPlace), no ready member, Ready from that. The pass that
// holds c ends before the usual status patch, and the last one said Available.
func (r *Reconciler) reportHeld(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) error {
	before := c.DeepCopy()
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionAvailable, Status: metav1.ConditionFalse,
		Reason: etcdv1beta2.ReasonReplacedInPlace, ObservedGeneration: c.Generation,
		Message: fmt.Sprintf("EtcdRestore %s replaces this cluster in place: its volumes are kept for it, its members are stopped, and it is about to be deleted", name)})
	c.Status.ReadyMembers = 0
	setReady(c)
	if equality.Semantic.DeepEqual(before.Status, c.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status of the held %s: %w", klog.KObj(c), err)
	}
	return nil
}

// stopReplaced, for a cluster being deleted that an EtcdRestore replaces in place
// (AnnotationReplacedBy), retains its volumes if they are not yet (the restore waits for that
// before it deletes the cluster; this is the second line) and deletes its member pods with a
// short grace period (a cluster on volumes had them stopped before its deletion; emptyDir ones
// now); the garbage collector would delete them with their own. Pods that stay Terminating are
// force-deleted only with the person's opt-in (forceDeleteStuck). Nothing else of a deleted
// cluster is touched. It reports when to look again (0: nothing left to do).
func (r *Reconciler) stopReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster) (time.Duration, error) {
	if _, _, ok := restoreboot.Replacing(c); !ok {
		return 0, nil
	}
	if err := r.retainReplaced(ctx, c); err != nil {
		return 0, err
	}
	pods, err := restoreboot.StopMembers(ctx, r.Client, r.Client, c)
	if err != nil {
		return 0, err
	}
	return r.forceDeleteStuck(ctx, c, pods)
}
