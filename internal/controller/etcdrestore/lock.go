package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// One EtcdRestore per cluster at a time: of the unfinished EtcdRestores of one etcdCluster.name
// in a namespace, the one that made the cluster now standing goes first, then the oldest (ties
// by name). The others wait and touch nothing. The order is total, so two restores never wait
// for each other, and a restore that already made its cluster is never overtaken.

// errLocked means another EtcdRestore of the same cluster goes first.
type errLocked struct{ holder string }

func (e errLocked) Error() string {
	return fmt.Sprintf("waiting for EtcdRestore %s of the same EtcdCluster to finish: one restore per cluster at a time, and until then this one changes nothing", e.holder)
}

// lockHolder returns the unfinished EtcdRestore that goes before rs, or nil when rs may go on.
// It reads around the cache: a restore created a moment ago must be seen.
func (r *Reconciler) lockHolder(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*etcdv1beta2.EtcdRestore, error) {
	list := &etcdv1beta2.EtcdRestoreList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EtcdRestores in %s: %w", rs.Namespace, err)
	}
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting EtcdCluster %s: %w", rs.Spec.EtcdCluster.Name, err)
		}
		c = nil
	}
	var first *etcdv1beta2.EtcdRestore
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == rs.UID || o.Spec.EtcdCluster.Name != rs.Spec.EtcdCluster.Name || o.DeletionTimestamp != nil || finished(o) {
			continue
		}
		if precedes(o, rs, c) && (first == nil || precedes(o, first, c)) {
			first = o
		}
	}
	return first, nil
}

// precedes reports whether restore a goes before b on cluster c (nil: none stands).
func precedes(a, b *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) bool {
	if c != nil {
		if oa, ob := ours(c, a), ours(c, b); oa != ob {
			return oa
		}
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// restoreOf returns the unfinished EtcdRestore that made c, if any: such a cluster is that
// restore's until it finishes, and no other restore deletes it. A cluster applied with
// bootstrap.restore.source by a person names no EtcdRestore.
func (r *Reconciler) restoreOf(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*etcdv1beta2.EtcdRestore, error) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil || c.Spec.Bootstrap.Restore.RestoreName == "" {
		return nil, nil
	}
	o := &etcdv1beta2.EtcdRestore{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.Bootstrap.Restore.RestoreName}, o)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting EtcdRestore %s that made EtcdCluster %s: %w", c.Spec.Bootstrap.Restore.RestoreName, c.Name, err)
	case ours(c, o) && !finished(o) && o.DeletionTimestamp == nil:
		return o, nil
	}
	return nil, nil
}

// wait records that rs waits for holder, with a Warning event when it starts waiting.
func (r *Reconciler) wait(rs *etcdv1beta2.EtcdRestore, holder string) {
	msg := errLocked{holder: holder}.Error()
	if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete); c == nil || c.Reason != etcdv1beta2.ReasonRestoreInProgress {
		r.Recorder.Event(rs, corev1.EventTypeWarning, etcdv1beta2.ReasonRestoreInProgress, msg)
	}
	if rs.Status.Phase == "" {
		rs.Status.Phase = etcdv1beta2.RestorePhasePending
	}
	r.setCondition(rs, etcdv1beta2.RestoreConditionComplete, metav1.ConditionFalse, etcdv1beta2.ReasonRestoreInProgress, msg)
}
