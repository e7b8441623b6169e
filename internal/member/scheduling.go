package member

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// spreadConstraints are the pod policy's topology spread constraints; one without a
// labelSelector selects the cluster's own members (app=etcd, etcd_cluster=<name>), which is
// what "spread the members" means.
func spreadConstraints(c *etcdv1beta2.EtcdCluster, policy *etcdv1beta2.PodPolicy) []corev1.TopologySpreadConstraint {
	if len(policy.TopologySpreadConstraints) == 0 {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, 0, len(policy.TopologySpreadConstraints))
	for _, tsc := range policy.TopologySpreadConstraints {
		tsc = *tsc.DeepCopy()
		if tsc.LabelSelector == nil {
			tsc.LabelSelector = &metav1.LabelSelector{MatchLabels: SelectorLabels(c)}
		}
		out = append(out, tsc)
	}
	return out
}
