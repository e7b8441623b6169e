package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// memoryLimit sets spec.pod.resources' memory limit of cluster c in ns.
func memoryLimit(t *testing.T, ns, limit string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "spec.pod.resources updated", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if c.Spec.Pod == nil {
			c.Spec.Pod = &etcdv1beta2.PodPolicy{}
		}
		c.Spec.Pod.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}
		return k8s.Update(context.Background(), c)
	}))
}

// memberPods maps the member pods of ns to their UID and memory limit.
func memberPods(t *testing.T, ns string) map[string]string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns), client.HasLabels{member.LabelMember}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = string(p.UID) + "/" + member.PodSpecHash(&p) + "/" + p.Spec.Containers[0].Resources.Limits.Memory().String()
		}
	}
	return out
}

// playDisruptionController does for the cluster's PodDisruptionBudget what envtest has no
// controller for: while its three member pods run and none is terminating, one disruption is
// allowed (maxUnavailable 1), so the eviction API lets one member go at a time.
func playDisruptionController(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pdb := &policyv1.PodDisruptionBudget{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, pdb); err != nil {
				continue
			}
			pods := &corev1.PodList{}
			if err := k8s.List(ctx, pods, client.InNamespace(ns), client.HasLabels{member.LabelMember}); err != nil {
				continue
			}
			healthy := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
					healthy++
				}
			}
			allowed := int32(0)
			if healthy >= 3 {
				allowed = 1
			}
			if pdb.Status.DisruptionsAllowed == allowed && pdb.Status.ObservedGeneration == pdb.Generation {
				continue
			}
			pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
				CurrentHealthy: int32(healthy), DesiredHealthy: 2, ExpectedPods: 3}
			_ = k8s.Status().Update(ctx, pdb)
		}
	}()
}

// TestRollingSpecChange: a change of spec.pod reaches running members. On volumes, each
// member's pod is evicted and recreated on its volume with the new spec, the same three members
// (IDs) throughout, followers first and the leader last after one leadership move; without
// volumes, each member is replaced by a new one, never fewer than two at a time. The evictions
// go through the eviction API, which envtest's stand-in disruption controller allows one at a
// time. While the roll
// runs the cluster lists the outdated members and Rolling is True; afterwards nothing is
// outdated and Rolling is False.
func TestRollingSpecChange(t *testing.T) {
	for _, pvc := range []bool{true, false} {
		t.Run(fmt.Sprintf("volumes=%t", pvc), func(t *testing.T) {
			var ns string
			var f *fakeEtcd
			if pvc {
				ns, f = pvcCluster(t, "roll", true)
			} else {
				ns, f = grown(t, "roll", 3)
			}
			ids := func() []uint64 {
				f.mu.Lock()
				defer f.mu.Unlock()
				var out []uint64
				for _, m := range f.members {
					out = append(out, m.ID)
				}
				slices.Sort(out)
				return out
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			playDisruptionController(ctx, t, ns)
			before, leader := ids(), func() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.members[0].ID }()
			oldHash := member.SpecHash(getCluster(t, ns, "c"))

			memoryLimit(t, ns, "512Mi")
			sawRolling, fewest := false, 3
			testutil.Eventually(t, 2*testutil.Timeout, "every member rolled", testutil.NoError(func() error {
				c := getCluster(t, ns, "c")
				if len(c.Status.Members.Outdated) > 0 && condition(c, etcdv1beta2.ClusterConditionRolling) == "True/"+etcdv1beta2.ReasonRollingUpdate {
					sawRolling = true
				}
				fewest = min(fewest, len(memberNames(f, true)))
				pods := memberPods(t, ns)
				for name, p := range pods {
					if len(p) < 7 || p[len(p)-6:] != "/512Mi" {
						return fmt.Errorf("pod %s: %s; want hash %s; Progressing %s; Degraded %s; members %+v", name, p, member.SpecHash(c), condition(c, "Progressing"), condition(c, "Degraded"), c.Status.Members)
					}
				}
				if len(pods) != 3 || len(c.Status.Members.Outdated) > 0 || condition(c, etcdv1beta2.ClusterConditionRolling) != "False/"+etcdv1beta2.ReasonAsExpected ||
					condition(c, "Available") != "True/ClusterHealthy" {
					return fmt.Errorf("pods %v, outdated %v, Rolling %s, Progressing %s", pods, c.Status.Members.Outdated, condition(c, etcdv1beta2.ClusterConditionRolling), condition(c, "Progressing"))
				}
				return nil
			}))
			if !sawRolling {
				t.Error("never saw Rolling True with the outdated members listed")
			}
			if newHash := member.SpecHash(getCluster(t, ns, "c")); newHash == oldHash {
				t.Fatal("the spec hash did not change with the resources")
			}
			after := ids()
			f.mu.Lock()
			moves := slices.Clone(f.leaderMoves)
			f.mu.Unlock()
			if pvc {
				if !slices.Equal(before, after) {
					t.Fatalf("members %v -> %v: members on volumes must be restarted, not replaced", before, after)
				}
				if len(moves) != 1 || moves[0] == leader {
					t.Fatalf("leadership moves %v (leader was %d): want exactly one, to a follower", moves, leader)
				}
			} else {
				if slices.ContainsFunc(after, func(id uint64) bool { return slices.Contains(before, id) }) {
					t.Fatalf("members %v -> %v: members without volumes must be replaced", before, after)
				}
				if fewest < 2 {
					t.Fatalf("the cluster went down to %d voting members", fewest)
				}
			}
		})
	}
}
