//go:build e2e && bench

package bench

import (
	"fmt"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// nodeLossTimeout bounds the wait for a cluster healed after a node loss (e2e's nodeLossBound is
// 2 min; minutes more than a slow run).
const nodeLossTimeout = 6 * time.Minute

// benchNodeLoss (three nodes, issue 34) times a node lost with a member of a 3-member emptyDir
// cluster (hack/local-cluster.sh node-down: its kubelet, runtime and containers killed, its
// network cut) until three members are ready again, none on the lost node and none the lost
// member: the Node NotReady after the node monitor's grace, cluster.NodeLostGrace, then the
// removal through the membership API and a new member. One cluster per run; the node comes back
// (and is Ready) before the next. Skipped on fewer than three nodes (the single-node CI smoke).
func benchNodeLoss(t *testing.T, f *framework.Framework, rep *report) {
	f.NeedThreeNodes(t)
	ns := f.CreateNamespace(t, "bench-nodeloss")
	var healed []float64
	for i := range rep.Runs {
		name := fmt.Sprintf("n-%d", i)
		c := &etcdv1beta2.EtcdCluster{}
		c.Namespace, c.Name, c.Spec.Size = ns, name, 3
		f.Create(t, c)
		f.WaitClusterAvailable(t, ns, name, 3, day2Timeout)
		member, node := f.MemberOffHost(t, ns, name)
		start := time.Now()
		f.NodeDown(t, node)
		f.WaitNodeLossHealed(t, ns, name, 3, member, node, nodeLossTimeout)
		secs := time.Since(start).Seconds()
		t.Logf("%s: node %s lost with %s, 3 ready members again in %.1f s", name, node, member, secs)
		healed = append(healed, secs)
		f.NodeUp(t, node)
		deleteCluster(t, f, ns, name)
	}
	rep.add(figure{Name: "member replaced after its node is lost, 3 emptyDir members on three nodes: node lost -> 3 ready members, none on it", Values: healed,
		Baseline: "dead member replaced, 3 members with volumes: a follower's pod and volume deleted -> 3 ready members, a new one in its place",
		Note:     "about 45 s of each value is the node monitor's grace before the Node is NotReady, 15 s cluster.NodeLostGrace"})
}
