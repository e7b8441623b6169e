package etcdcluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get

// setRestoreFailed marks a cluster that waits for a restore's seed when that EtcdRestore has
// failed: Degraded=True, reason RestoreFailed, with the restore's own reason and how to retry.
// Otherwise the cluster would only say that it waits for a seed that will never come. The
// restore is read around the cache (only while the seed is awaited), so the operator needs
// nothing but get on EtcdRestores.
func (r *Reconciler) setRestoreFailed(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	b := c.Spec.Bootstrap
	if b == nil || b.Restore == nil || b.Restore.RestoreName == "" || c.Status.ClusterID != "" {
		return nil
	}
	rs := &etcdv1beta2.EtcdRestore{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: b.Restore.RestoreName}, rs)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("getting EtcdRestore %s of %s: %w", b.Restore.RestoreName, c.Name, err)
	}
	failed := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
	var msg string
	switch {
	case err != nil:
		msg = fmt.Sprintf("EtcdRestore %s, which seeds this cluster, is gone: no seed member will come", b.Restore.RestoreName)
	case failed != nil && failed.Status == metav1.ConditionTrue:
		msg = fmt.Sprintf("EtcdRestore %s, which seeds this cluster, failed (%s): %s", rs.Name, failed.Reason, failed.Message)
	default:
		return nil
	}
	msg += fmt.Sprintf(". To retry, fix the cause and create a new EtcdRestore with etcdCluster.name %s: it replaces this memberless cluster", c.Name)
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue,
		Reason: etcdv1beta2.ReasonRestoreFailed, Message: msg, ObservedGeneration: c.Generation})
	c.Status.Reason = etcdv1beta2.ReasonRestoreFailed
	c.Status.Phase = phase(c)
	return nil
}
