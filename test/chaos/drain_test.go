//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// nodeDrained drains a node with a member while the load runs, with a seeded timeout of 30 to
// 60 s; the drain evicts everything it may, the operators included. On the single-node local
// cluster the PodDisruptionBudget the operator made (maxUnavailable 1 for size 3) lets it evict
// one member and refuses the others until the timeout, so the drain fails on the budget. On
// three nodes (make local-up-3) the drained node runs one member, the two others run on other
// nodes: the drain evicts that member and succeeds, and the operator replaces it on a node still
// schedulable. Either way no two members are down at once. Then the node is uncordoned, and the
// operators, if evicted, start again and replace the evicted member.
func nodeDrained(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	pods := memberPods(t, f, ns)
	node := pods[0].Spec.NodeName
	multi := len(f.ReadyNodes(t)) >= 3
	if multi {
		node = pods[rng.IntN(len(pods))].Spec.NodeName
	}
	timeout := time.Duration(30+rng.IntN(31)) * time.Second
	// Never leave the shared cluster cordoned, whatever happens to this run.
	t.Cleanup(func() { uncordon(t, f, node) })

	d := watchDisruptions(f, ns, 3, timeout+time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), timeout+time.Minute)
	out, stderr, err := f.Kubectl(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout.String())
	cancel()
	t.Logf("fault: kubectl drain %s --timeout=%s ended: %v", node, timeout, err)
	uncordon(t, f, node)
	over := time.Now()
	d.finish()
	t.Logf("member pods during the drain: %s", strings.Join(d.timeline, "; "))
	switch {
	case multi && err != nil:
		t.Fatalf("kubectl drain %s, which runs one member, failed: %v\n%s", node, err, tail(stderr, 20))
	case !multi && err == nil:
		t.Fatalf("kubectl drain %s succeeded: it evicted every member, the PodDisruptionBudget did not hold\n%s", node, out)
	case !multi && !strings.Contains(stderr, "disruption budget"):
		t.Errorf("the drain failed, but not on the PodDisruptionBudget:\n%s", tail(stderr, 20))
	}
	switch {
	case d.maxDown > 1:
		t.Fatalf("%d of 3 members were down at once during the drain (evicted: %v): the PodDisruptionBudget allows one", d.maxDown, d.evicted)
	case d.maxDown == 0:
		t.Fatalf("the drain evicted no member:\n%s", tail(stderr, 20))
	}
	for _, dep := range framework.OperatorDeployments {
		f.WaitForDeploymentAvailable(t, framework.OperatorNamespace, dep, 3*time.Minute)
	}
	waitHealed(t, f, ns, 3)
	return injected{size: 3, over: over, note: fmt.Sprintf("%s drained (timeout %s), evicted %v, at most %d down", node, timeout, d.evicted, d.maxDown)}
}

func uncordon(t *testing.T, f *framework.Framework, node string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := f.Kubectl(ctx, "uncordon", node); err != nil {
		t.Errorf("uncordoning %s: %v", node, err)
	}
}

// disruptions polls the member pods while a drain runs and records the most that were down
// at once: not Ready, being deleted, or missing from the size the cluster must have.
type disruptions struct {
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	maxDown  int
	evicted  []string // member pods seen being deleted or gone
	timeline []string // every change of the down count
}

func watchDisruptions(f *framework.Framework, ns string, size int, limit time.Duration) *disruptions {
	d := &disruptions{stop: make(chan struct{}), done: make(chan struct{})}
	initial := map[string]bool{}
	for _, p := range listMembers(f, ns) {
		initial[p.Name] = true
	}
	go func() {
		defer close(d.done)
		start, last := time.Now(), -1
		for time.Since(start) < limit {
			select {
			case <-d.stop:
				return
			default:
			}
			if pods := listMembers(f, ns); pods != nil {
				up, present := 0, map[string]bool{}
				for _, p := range pods {
					if p.DeletionTimestamp == nil {
						present[p.Name] = true
						if podReady(&p) {
							up++
						}
					}
				}
				for name := range initial {
					if !present[name] && !slices.Contains(d.evicted, name) {
						d.evicted = append(d.evicted, name)
					}
				}
				if down := size - up; down != last {
					d.timeline = append(d.timeline, fmt.Sprintf("%s: %d down", time.Since(start).Round(100*time.Millisecond), down))
					d.maxDown, last = max(d.maxDown, down), down
				}
			}
			time.Sleep(200 * time.Millisecond) //nolint:forbidigo // pacing of a bounded poll while the drain runs
		}
	}()
	return d
}

// finish stops the poll and waits for it; the fields are then safe to read.
func (d *disruptions) finish() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}

// listMembers lists the member pods, or returns nil when the API server did not answer.
func listMembers(f *framework.Framework, ns string) []corev1.Pod {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": "c"}); err != nil {
		return nil
	}
	return pods.Items
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitHealed waits until the cluster is whole again as etcd and the pods tell it, not the
// operator's status (which may be stale right after a fault): size Ready member pods, none
// being deleted, and etcd's member list exactly those pods, none a learner.
func waitHealed(t *testing.T, f *framework.Framework, ns string, size int) {
	t.Helper()
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	framework.Eventually(t, healTimeout, fmt.Sprintf("%d members, each a Ready pod", size), func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": "c"}); err != nil {
			return false, err
		}
		var ready []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = append(ready, p.Name)
			}
		}
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return false, err
		}
		var members []string
		for _, m := range ml.Members {
			if m.IsLearner {
				return false, fmt.Errorf("member %s is a learner", m.Name)
			}
			members = append(members, m.Name)
		}
		slices.Sort(ready)
		slices.Sort(members)
		return len(ready) == size && len(pods.Items) == size && slices.Equal(ready, members),
			fmt.Errorf("ready pods %v of %d, members %v", ready, len(pods.Items), members)
	})
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
