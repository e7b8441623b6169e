package etcdrestore

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// complete waits until the etcd operator has grown the cluster to its size and it is
// Available, then checks every member: the keyspace hash and key count at the backup's
// revision equal the seed's, and the revision is at least the backup's. Only then is the
// restore successful.
func (r *Reconciler) complete(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonClusterNotFound, "EtcdCluster %s was deleted during the restore", rs.Spec.EtcdCluster.Name)
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdCluster %s: %w", rs.Spec.EtcdCluster.Name, err)
	}
	if !ours(c, rs) {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonClusterNotFound, "EtcdCluster %s was replaced by another one during the restore", c.Name)
	}
	ready := c.Status.Members.Ready
	if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) || len(ready) != int(c.Spec.Size) || c.Status.ReadyMembers != c.Spec.Size || len(c.Status.Members.Unready) > 0 {
		// A member that failed to restore is the etcd operator's to replace.
		r.progress(rs, etcdv1beta2.RestorePhaseGrowing, fmt.Sprintf("waiting for the etcd operator to grow EtcdCluster %s: %d of %d members ready", c.Name, len(ready), c.Spec.Size))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	access, err := r.clientAccess(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := rs.Status.Verification
	names := append([]string(nil), ready...)
	sort.Strings(names)
	var restored int64
	for _, name := range names {
		st, err := r.checkAt(ctx, c, name, access, v.Revision)
		if err != nil {
			r.progress(rs, etcdv1beta2.RestorePhaseGrowing, fmt.Sprintf("checking member %s: %v", name, err))
			return ctrl.Result{RequeueAfter: requeueWait}, nil
		}
		if st.Hash != uint32(v.Hash) || st.Keys != v.Keys { //nolint:gosec // v.Hash came from a uint32
			v.Passed = false
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "member %s holds %d keys with keyspace hash %d at revision %d, the seed held %d keys with hash %d", name, st.Keys, st.Hash, v.Revision, v.Keys, v.Hash)
		}
		if st.Revision < v.Revision {
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "member %s is at revision %d, below the backup's %d", name, st.Revision, v.Revision)
		}
		restored = max(restored, st.Revision)
	}
	v.MembersVerified = int32(len(names)) //nolint:gosec // at most 7 members
	v.Passed = true
	rs.Status.RestoredRevision = restored
	r.succeed(rs, fmt.Sprintf("EtcdCluster %s is Available with %d members, each holding the backup's %d keys at revision %d (keyspace hash %d)", c.Name, len(names), v.Keys, v.Revision, v.Hash))
	return r.finished(ctx, rs)
}

// finished cleans up after a finished restore: once the restored cluster is verified, the etcd
// operator deletes the replaced cluster's volumes (looked at again until they are gone); a
// drill's scratch cluster goes when its TTL runs out.
func (r *Reconciler) finished(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	if rs.Status.Succeeded && len(rs.Status.RetainedVolumes) > 0 {
		c := &etcdv1beta2.EtcdCluster{}
		err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, fmt.Errorf("getting EtcdCluster %s: %w", rs.Spec.EtcdCluster.Name, err)
		case err == nil && ours(c, rs):
			left, err := r.releaseRetained(ctx, rs, c)
			if err != nil {
				return ctrl.Result{}, err
			}
			if left {
				return ctrl.Result{RequeueAfter: requeueWait}, nil
			}
		default:
			// The restored cluster is gone or another one stands: nothing asks for the
			// release any more, and the volumes stay, listed.
			if err := r.recordRetained(ctx, rs); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return r.expire(ctx, rs)
}

// expire deletes the scratch cluster of a finished restore drill once ttlSecondsAfterFinished
// has passed: only the cluster this restore made (checked by UID), with a UID precondition; its
// pods and volumes, controlled by it, go with it. A cluster restored in place is never deleted
// (admission refuses the TTL there), nor is anything a restore did not make: a drill that failed
// before making its cluster (ClusterExists) deletes nothing.
func (r *Reconciler) expire(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	ttl := rs.Spec.TTLSecondsAfterFinished
	if ttl == nil || rs.Spec.ClusterTemplate == nil || rs.Status.ClusterDeletedTime != nil || rs.Status.CompletionTime == nil {
		return ctrl.Result{}, nil
	}
	if wait := rs.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(r.now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	c := &etcdv1beta2.EtcdCluster{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("getting EtcdCluster %s: %w", rs.Spec.EtcdCluster.Name, err)
	}
	if err == nil && ours(c, rs) {
		uid := c.UID
		err := r.Delete(ctx, c, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("deleting scratch EtcdCluster %s: %w", c.Name, err)
		}
		r.Recorder.Eventf(rs, corev1.EventTypeNormal, "ClusterDeleted", "Deleted scratch EtcdCluster %s %ds after the restore finished", c.Name, *ttl)
	}
	// Set even when there was nothing of this restore's to delete: the TTL has run its course.
	now := metav1.NewTime(r.now())
	rs.Status.ClusterDeletedTime = &now
	return ctrl.Result{}, nil
}
