//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// HostNode is the local cluster's first node: the machine itself, which hack/local-cluster.sh
// cannot fail (its kubelet runs in the host's network namespace).
const HostNode = "local-node"

// ReadyNodes lists the schedulable Ready nodes.
func (f *Framework) ReadyNodes(t testing.TB) []corev1.Node {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := f.Client.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Node
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				out = append(out, n)
			}
		}
	}
	return out
}

// NeedThreeNodes skips a test that needs three schedulable nodes on a smaller cluster.
func (f *Framework) NeedThreeNodes(t testing.TB) {
	t.Helper()
	if n := len(f.ReadyNodes(t)); n < 3 {
		t.Skipf("%d schedulable node(s); needs 3 (make test-multinode)", n)
	}
}

// NodeDown loses node (hack/local-cluster.sh node-down: its kubelet, runtime and every
// container on it killed, its network cut; the Node goes NotReady after the node monitor's
// grace). The node comes back at the test's cleanup if NodeUp has not brought it back before.
func (f *Framework) NodeDown(t testing.TB, node string) {
	t.Helper()
	if node == HostNode {
		t.Fatalf("node %s is the host itself: it cannot be lost", node)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := f.nodeCmd(ctx, "node-up", node); err != nil {
			t.Errorf("bringing %s back: %v", node, err)
		}
	})
	if err := f.nodeCmd(t.Context(), "node-down", node); err != nil {
		t.Fatal(err)
	}
}

// NodeUp brings a node NodeDown lost back (its kubelet and runtime start again and find the
// pods it ran) and waits for the Node to be Ready.
func (f *Framework) NodeUp(t testing.TB, node string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := f.nodeCmd(ctx, "node-up", node); err != nil {
		t.Fatal(err)
	}
}

func (f *Framework) nodeCmd(ctx context.Context, verb, node string) error {
	script := filepath.Join(f.RootDir, "hack", "local-cluster.sh")
	out, err := exec.CommandContext(ctx, script, verb, node).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s %s: %w\n%s", script, verb, node, err, out)
	}
	return nil
}

// MemberOffHost is a member pod of cluster name on a node other than HostNode, and that node: the
// member a node-loss test can lose with its node. It fails the test when every member runs on
// the host.
func (f *Framework) MemberOffHost(t testing.TB, ns, name string) (member, node string) {
	t.Helper()
	list := &corev1.PodList{}
	if err := f.Client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && p.Spec.NodeName != HostNode && p.DeletionTimestamp == nil {
			return p.Name, p.Spec.NodeName
		}
	}
	t.Fatalf("no member of %s/%s runs on a node other than %s", ns, name, HostNode)
	return "", ""
}

// WaitNodeLossHealed waits up to bound for cluster name to be Available with size ready members,
// none of them the lost member and no live pod on the lost node. The lost member's own pod may
// stay Terminating on the lost node until it returns: it is no member and nothing waits for it.
// The lost member comes back under no name (its replacement has a new one), so a stale status
// that still lists it ready does not count as healed.
func (f *Framework) WaitNodeLossHealed(t testing.TB, ns, name string, size int32, member, lostNode string, bound time.Duration) {
	t.Helper()
	Eventually(t, bound, fmt.Sprintf("%d ready members of %s/%s, none on the lost node %s", size, ns, name, lostNode), func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		list := &corev1.PodList{}
		if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": name}); err != nil {
			return false, err
		}
		where := map[string]string{}
		onLost := false
		for _, p := range list.Items {
			where[p.Name] = p.Spec.NodeName
			onLost = onLost || (p.Spec.NodeName == lostNode && p.DeletionTimestamp == nil)
		}
		ok := meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) && c.Status.ReadyMembers == size &&
			len(c.Status.Members.Unready) == 0 && !onLost && !slices.Contains(c.Status.Members.Ready, member)
		return ok, fmt.Errorf("phase %s, ready %v, unready %v, pods %v", c.Status.Phase, c.Status.Members.Ready, c.Status.Members.Unready, where)
	})
}
