package etcdrestore

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// clientAccess is how the restore reaches c: its operator certificate and its credentials
// (none for plain http without authentication). A missing Secret is retried until the
// restore's deadline (it may be created late).
func (r *Reconciler) clientAccess(ctx context.Context, c *etcdv1beta2.EtcdCluster) (etcdaccess.Access, error) {
	cfg, err := kubesecret.OperatorAccess(ctx, r.Client, c)
	if reason.Of(err) == etcdv1beta2.ReasonSecretNotFound {
		return cfg, reason.Transient(etcdv1beta2.ReasonSecretNotFound, err)
	}
	return cfg, err
}

// checkAt checks member name of c at its client URL, connecting to its pod's IP when c controls
// a pod of that name with one: right after a member starts, the cluster DNS may still answer
// NXDOMAIN for its name from its cache (see cluster.Config.Addrs).
func (r *Reconciler) checkAt(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, access etcdaccess.Access, rev int64) (restoreboot.MemberState, error) {
	addr := ""
	p := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, p); err == nil && controlledBy(p, c.UID) {
		addr = p.Status.PodIP
	}
	return r.Check(ctx, member.ClientURL(c, name), addr, access, rev)
}
