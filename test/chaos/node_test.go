//go:build e2e && chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Node faults (issue 34) need a local cluster of three nodes (make local-up-3); on fewer they
// skip. The lost node is never the host's own (framework.HostNode), which cannot be failed.

// nodeLossHeal bounds a heal after a node loss: the Node NotReady after the node monitor's grace
// (~45 s), then an emptyDir member is removed through the membership API 15 s later
// (cluster.NodeLostGrace), a member on a volume once its pod has been evicted (a 5 s toleration
// below) and not ready for afterSeconds; then the replacement; with the etcd operator on the lost
// node, its own pod's toleration (60 s) before it runs elsewhere.
const nodeLossHeal = 8 * time.Minute

// nodeLost loses the node of one member (not the host's): its kubelet, runtime and containers
// killed, its network cut. Healed when three members are ready again, none of them the lost
// one; the node comes back at the run's cleanup, with the old pod still Terminating there.
func nodeLost(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	f.NeedThreeNodes(t)
	member, node := f.MemberOffHost(t, ns, "c")
	return loseNode(t, f, ns, member, node, "")
}

// withNodeLossOnVolumes gives the members volumes, member replacement after 30 s, and a 5 s
// toleration of a lost node, as TestNodeLostVolumeMemberReplaced does: the lost member's pod is
// deleted by the taint manager (and stays Terminating) before its replacement is due.
func withNodeLossOnVolumes(c *etcdv1beta2.EtcdCluster) {
	withVolumes(c)
	c.Spec.MemberReplacement = &etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](30)}
	for _, taint := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		c.Spec.Pod.Tolerations = append(c.Spec.Pod.Tolerations, corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)})
	}
}

// nodeLostWithOperator first moves the etcd operator onto the node of a member (every other
// node cordoned while its pod is deleted), then loses that node: the cluster is without its
// operator until the operator's pod leaves the lost node (its toleration) and runs elsewhere,
// which then replaces the lost member.
func nodeLostWithOperator(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	f.NeedThreeNodes(t)
	member, node := f.MemberOffHost(t, ns, "c")
	var others []string
	for _, n := range f.ReadyNodes(t) {
		if n.Name != node {
			others = append(others, n.Name)
		}
	}
	for _, n := range others {
		t.Cleanup(func() { uncordon(t, f, n) })
		if _, _, err := f.Kubectl(t.Context(), "cordon", n); err != nil {
			t.Fatalf("cordon %s: %v", n, err)
		}
	}
	killOperator(t, f, "etcd-operator")
	for _, n := range others {
		uncordon(t, f, n)
	}
	for _, p := range operatorPods(t, f, "etcd-operator") {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != node {
			t.Fatalf("etcd operator pod %s runs on %s, not on %s", p.Name, p.Spec.NodeName, node)
		}
	}
	return loseNode(t, f, ns, member, node, " with the etcd operator")
}

// loseNode loses node, which runs member (what: " with ..." for the note), and waits for the
// heal itself: the status can show the lost member ready for up to a minute after the loss, so
// runFault's wait for Available would count a stale status as healed.
func loseNode(t *testing.T, f *framework.Framework, ns, member, node, what string) injected {
	start := time.Now()
	f.NodeDown(t, node)
	t.Logf("fault: node %s lost%s, with member %s", node, what, member)
	f.WaitNodeLossHealed(t, ns, "c", 3, member, node, nodeLossHeal)
	return injected{size: 3, over: start, note: fmt.Sprintf("%s lost%s, with %s", node, what, member)}
}

// nodeLostAndBack loses the node of one member for a seeded 20 to 120 s and brings it back
// (its kubelet and runtime start again and find the pods they ran). A short loss ends before
// the member is removed (Node NotReady after ~45 s, then cluster.NodeLostGrace, 15 s): the member
// comes back with its data; a long one finds it replaced already. Either way the cluster heals to
// three members, and the node's old pod, if deleted meanwhile, is not started again. Heal counts
// from the node's return.
func nodeLostAndBack(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	f.NeedThreeNodes(t)
	member, node := f.MemberOffHost(t, ns, "c")
	down := time.Duration(20+rng.IntN(101)) * time.Second
	f.NodeDown(t, node)
	t.Logf("fault: node %s lost with member %s for %s", node, member, down)
	time.Sleep(down) //nolint:forbidigo // the seeded length of the loss
	f.NodeUp(t, node)
	back := time.Now()
	waitHealed(t, f, ns, 3)
	replaced := true
	for _, p := range memberPods(t, f, ns) {
		replaced = replaced && p.Name != member
	}
	return injected{size: 3, over: back, note: fmt.Sprintf("%s down %s with %s (replaced: %t)", node, down, member, replaced)}
}
