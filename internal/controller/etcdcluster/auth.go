package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// reconcileAuth turns etcd authentication on for a cluster with spec.auth. It runs in the
// upkeep, when the membership needs nothing, so the user, its role and the switch are written
// through a healthy quorum. A cluster whose authentication is on (turned on before, by a
// person, or restored from a backup that had it) costs one AuthStatus call per pass; the
// operator's client has authenticated with the Secret's credentials already, or the pass would
// have stopped with AuthFailed in observe.
//
// Removing spec.auth does not turn authentication off: the operator would need the credentials
// it no longer has (docs/etcdcluster.md says how).
func (r *Reconciler) reconcileAuth(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) error {
	if c.Spec.Auth == nil {
		return nil
	}
	on, err := obs.etcd.AuthEnabled(ctx)
	if err != nil {
		return err
	}
	if on {
		return nil
	}
	if err := obs.etcd.EnableAuth(ctx); err != nil {
		return reason.New(etcdv1beta2.ReasonAuthFailed, fmt.Errorf("turning etcd authentication on with the user of secret %s: %w", c.Spec.Auth.SecretName, err))
	}
	r.event(c, corev1.EventTypeNormal, "AuthEnabled", fmt.Sprintf("etcd authentication is on; the operators authenticate with the user of secret %s, which has the root role", c.Spec.Auth.SecretName))
	return nil
}
