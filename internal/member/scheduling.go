package member

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// NodeLossToleration is how long an emptyDir member's pod stays bound to a node that is not
// ready or unreachable before Kubernetes evicts it (the API server's default is 300 s): its
// data lives only in the pod, the member cannot come back elsewhere, and the etcd operator
// replaces it once the eviction is under way (a pod the taint manager deletes counts as stuck
// once its grace period is over). A member on a volume keeps Kubernetes' default.
const NodeLossToleration = 60

// tolerations are the pod policy's, plus for an emptyDir member NoExecute tolerations of
// node.kubernetes.io/not-ready and unreachable for NodeLossToleration seconds, unless the
// policy tolerates that taint itself (its tolerations win).
func tolerations(policy *etcdv1beta2.PodPolicy) []corev1.Toleration {
	out := slices.Clone(policy.Tolerations)
	if policy.PersistentVolumeClaimSpec != nil {
		return out
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		taint := &corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
		if slices.ContainsFunc(policy.Tolerations, func(t corev1.Toleration) bool { return t.ToleratesTaint(taint) }) {
			continue
		}
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To[int64](NodeLossToleration)})
	}
	return out
}
