package etcdcluster

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// A pass can spend seconds waiting on etcd: a member killed while it answers a request (a
// disaster, or the pods of a cluster a restore replaces) holds the request until its timeout.
// Passes of one cluster name run one at a time, so a cluster re-created under the same name
// (an in-place restore) would wait for that pass to time out before its members are built.
// A pass of a cluster that is being deleted, or that a restore is about to replace, has
// nothing left to learn from etcd: its context is cancelled as soon as the watch shows it.

// startPass registers the pass of c and returns its context and the function that ends it.
func (r *Reconciler) startPass(ctx context.Context, c *etcdv1beta2.EtcdCluster) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &pass{cancel: cancel} // a pointer: functions cannot be compared
	r.passes.Store(c.UID, p)
	return ctx, func() {
		r.passes.CompareAndDelete(c.UID, p)
		cancel()
	}
}

// pass is a pass under way.
type pass struct{ cancel context.CancelFunc }

// leaving reports whether c is being deleted or marked replaced by a restore.
func leaving(c *etcdv1beta2.EtcdCluster) bool {
	return c.DeletionTimestamp != nil || c.Annotations[etcdv1beta2.AnnotationReplacedBy] != ""
}

// abandonOnLeave is an event handler that enqueues nothing: when a cluster starts leaving
// (deleted, or marked replaced), it cancels the pass of that cluster under way, if any. The
// pass's status patch then fails and the next pass, which For's handler enqueues, sees the
// cluster as it is.
func (r *Reconciler) abandonOnLeave() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*etcdv1beta2.EtcdCluster)
			cur, ok2 := e.ObjectNew.(*etcdv1beta2.EtcdCluster)
			if !ok1 || !ok2 || !leaving(cur) || leaving(old) {
				return
			}
			if p, ok := r.passes.Load(cur.UID); ok {
				p.(*pass).cancel()
			}
		},
	}
}
