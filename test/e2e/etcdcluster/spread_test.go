//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// zoneLabel is the node label the members' default affinity spreads zones over.
const zoneLabel = "topology.kubernetes.io/zone"

// TestSpreadOverNodes (issue 34): a 3-member cluster with the default pod policy runs one
// member per node and per zone where there are three of each, and says so (Spread True); on
// fewer nodes it says which node would take the quorum with it (Spread False,
// NodeLossLosesQuorum). CI's single node checks the second; `make test-multinode` the first.
func TestSpreadOverNodes(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	nodes := f.ReadyNodes(t)
	zoneOf := map[string]string{}
	zones := map[string]bool{}
	for _, n := range nodes {
		zoneOf[n.Name] = n.Labels[zoneLabel]
		zones[n.Labels[zoneLabel]] = true
	}
	ns := f.CreateNamespace(t, "etcd-spread")
	f.Create(t, newCluster(ns, "c", 3))
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)

	onNode := membersByNode(t, f, ns, "c")
	var want string
	if len(nodes) >= 3 {
		want = etcdv1beta2.ReasonSurvivesNodeLoss
		if len(onNode) != 3 {
			t.Fatalf("members on %d of %d nodes: %v", len(onNode), len(nodes), onNode)
		}
		if len(zones) >= 3 && !zones[""] {
			inZone := map[string]bool{}
			for node := range onNode {
				inZone[zoneOf[node]] = true
			}
			if len(inZone) != 3 {
				t.Fatalf("members in zones %v, want three zones (nodes %v)", inZone, onNode)
			}
		}
	} else {
		want = etcdv1beta2.ReasonNodeLossLosesQuorum
	}
	var last string
	framework.Eventually(t, time.Minute, "Spread condition "+want, func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, "c")
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionSpread)
		if cond == nil {
			return false, fmt.Errorf("no Spread condition: %v", conds(c))
		}
		last = cond.Message
		return cond.Reason == want, fmt.Errorf("Spread %s/%s: %s", cond.Status, cond.Reason, cond.Message)
	})
	if want == etcdv1beta2.ReasonNodeLossLosesQuorum {
		for node := range onNode {
			if len(onNode[node]) > 1 && !strings.Contains(last, "node "+node) {
				t.Fatalf("Spread message %q does not name node %s, which runs %v", last, node, onNode[node])
			}
		}
	}
	t.Logf("members per node %v; Spread: %s", onNode, last)
}

// TestDrainMovesOneMemberAtATime (issue 34): `kubectl drain` of the node running two members of
// a 5-member cluster on three nodes evicts them through the PodDisruptionBudget one at a time:
// never more than one member is down while it runs, the cluster ends with five ready members
// off the drained node, and no acknowledged write is lost. Needs three schedulable nodes
// (`make test-multinode`).
func TestDrainMovesOneMemberAtATime(t *testing.T) {
	f := framework.Global(t)
	f.NeedThreeNodes(t)
	ns := f.CreateNamespace(t, "etcd-drain")
	f.Create(t, newCluster(ns, "c", 5))
	waitAvailable(t, f, ns, "c", 5, 5*time.Minute)
	onNode := membersByNode(t, f, ns, "c")
	var node string
	for n, members := range onNode {
		if len(members) > len(onNode[node]) || (len(members) == len(onNode[node]) && n < node) {
			node = n
		}
	}
	if len(onNode[node]) < 2 {
		t.Fatalf("no node runs two members: %v", onNode)
	}
	t.Logf("draining %s, which runs %v (all: %v)", node, onNode[node], onNode)
	w := framework.StartWriter(f.EtcdClient(t, clientEndpoint(ns, "c")), "/drain/")

	// Watch every 100 ms how many members are down: a pod not Ready, or terminating.
	ctx, stop := context.WithCancel(t.Context())
	var mu sync.Mutex
	maxDown, downAt := 0, ""
	var watched sync.WaitGroup
	watched.Go(func() {
		for ctx.Err() == nil {
			down := []string{}
			list := &corev1.PodList{}
			// Not memberPods: t.Fatal belongs to the test's goroutine.
			if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": "c"}); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			pods := list.Items
			for _, p := range pods {
				if p.DeletionTimestamp != nil || !podReady(&p) {
					down = append(down, p.Name)
				}
			}
			// A member being replaced: the old pod gone, its successor not created yet.
			n := len(down) + max(0, 5-len(pods))
			mu.Lock()
			if n > maxDown {
				maxDown, downAt = n, fmt.Sprintf("%v and %d missing at %s", down, max(0, 5-len(pods)), time.Now().Format(time.TimeOnly))
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Cleanup(func() {
		if _, _, err := f.Kubectl(context.Background(), "uncordon", node); err != nil {
			t.Logf("uncordon %s: %v", node, err)
		}
	})
	dctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	out, errOut, err := f.Kubectl(dctx, "drain", node, "--pod-selector", "app=etcd,etcd_cluster=c",
		"--delete-emptydir-data", "--ignore-daemonsets", "--timeout", "7m")
	if err != nil {
		stop()
		watched.Wait()
		t.Fatalf("kubectl drain %s: %v\n%s%s", node, err, out, errOut)
	}
	waitAvailable(t, f, ns, "c", 5, 5*time.Minute)
	stop()
	watched.Wait()
	t.Logf("drain and recovery took %s", time.Since(start).Round(time.Second))
	w.Finish(t)
	if maxDown > 1 {
		t.Fatalf("%d members down at once during the drain (%s)", maxDown, downAt)
	}
	for _, p := range memberPods(t, f, ns, "c") {
		if p.Spec.NodeName == node {
			t.Fatalf("member %s still runs on the drained node %s", p.Name, node)
		}
	}
	c := &etcdv1beta2.EtcdCluster{}
	if err := f.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "c"}, c); err != nil {
		t.Fatal(err)
	}
	if len(c.Status.Members.Unready) > 0 {
		t.Fatalf("unready members after the drain: %v", c.Status.Members.Unready)
	}
}

// membersByNode maps each node to the names of the cluster's member pods on it.
func membersByNode(t testing.TB, f *framework.Framework, ns, name string) map[string][]string {
	t.Helper()
	onNode := map[string][]string{}
	for _, p := range memberPods(t, f, ns, name) {
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Name)
	}
	return onNode
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
