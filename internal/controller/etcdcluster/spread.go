package etcdcluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// setSpread sets the Spread condition from where the member pods run: True when losing any one
// node keeps a quorum of them, False naming the node that holds too many. Only scheduled,
// running (not terminating) member pods count, and only clusters of three or more have a node
// to survive: with fewer, the condition is removed. Zones are not counted: they are labels of
// Nodes, which the operator does not read (namespaced RBAC); the members' default affinity
// prefers distinct zones too (internal/member).
func setSpread(c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod) {
	byNode := map[string][]string{}
	n := 0
	for name, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], name)
		n++
	}
	if n < 3 {
		meta.RemoveStatusCondition(&c.Status.Conditions, etcdv1beta2.ClusterConditionSpread)
		return
	}
	// Losing k members keeps a quorum of n while n-k > n/2.
	tolerated := (n - 1) / 2
	nodes := make([]string, 0, len(byNode))
	for node := range byNode {
		nodes = append(nodes, node)
	}
	// The node holding the most members first, then by name: the message is stable.
	slices.SortFunc(nodes, func(a, b string) int {
		if d := len(byNode[b]) - len(byNode[a]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	worst := nodes[0]
	cond := metav1.Condition{Type: etcdv1beta2.ClusterConditionSpread, ObservedGeneration: c.Generation}
	if held := byNode[worst]; len(held) > tolerated {
		slices.Sort(held)
		cond.Status, cond.Reason = metav1.ConditionFalse, etcdv1beta2.ReasonNodeLossLosesQuorum
		cond.Message = fmt.Sprintf("node %s runs %d of the %d members (%s): losing it loses the quorum; at most %d per node keeps it, so the members need at least %d nodes they may be scheduled on",
			worst, len(held), n, strings.Join(held, ", "), tolerated, (n+tolerated-1)/tolerated)
	} else {
		cond.Status, cond.Reason = metav1.ConditionTrue, etcdv1beta2.ReasonSurvivesNodeLoss
		cond.Message = fmt.Sprintf("%d members on %d nodes, at most %d per node: losing any one node keeps the quorum", n, len(nodes), len(byNode[worst]))
	}
	meta.SetStatusCondition(&c.Status.Conditions, cond)
}
