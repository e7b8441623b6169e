//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// availability polls the cluster with a write every 500 ms until stopped and reports the
// longest time without a successful write.
type availability struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	gap   time.Duration
	fails int
}

func watchAvailability(cli *clientv3.Client) *availability {
	a := &availability{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		last := time.Now()
		for i := 0; i < 2000; i++ { // bounded: 2000 x 500 ms
			select {
			case <-a.stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := cli.Put(ctx, "/availability", fmt.Sprint(i))
			cancel()
			a.mu.Lock()
			if err == nil {
				a.gap = max(a.gap, time.Since(last))
				last = time.Now()
			} else {
				a.fails++
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *availability) finish() (time.Duration, int) {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gap, a.fails
}

// TestRollingSpecChange: a resources change reaches the running members of a 3-member
// cluster on volumes and of one without, under a writer (one put every 20 ms) and a probe
// writing every 500 ms. On volumes: the same three members, each pod evicted and recreated on
// its volume, the leader last after exactly one leadership move. Without volumes: three new
// members replace the old ones. Both: every acknowledged write is there afterwards, the
// cluster stayed writable (no probe gap over 5 s), Ready again with nothing outdated.
func TestRollingSpecChange(t *testing.T) {
	t.Parallel()
	for _, volumes := range []bool{true, false} {
		t.Run(fmt.Sprintf("volumes=%t", volumes), func(t *testing.T) {
			t.Parallel()
			f := framework.Global(t)
			ns := f.CreateNamespace(t, "etcd-roll")
			c := newCluster(ns, "c", 3)
			if volumes {
				onVolumes(c)
			}
			f.Create(t, c)
			waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
			cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
			before := memberIDs(t, f, ns)

			writer := framework.StartWriter(cli, "/roll/")
			probe := watchAvailability(cli)
			start := time.Now()
			framework.Eventually(t, time.Minute, "spec.pod.resources changed", func(ctx context.Context) (bool, error) {
				cur := getCluster(t, f, ns, "c")
				if cur.Spec.Pod == nil {
					cur.Spec.Pod = &etcdv1beta2.PodPolicy{}
				}
				cur.Spec.Pod.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m")}}
				return f.Client.Update(ctx, cur) == nil, nil
			})
			framework.Eventually(t, 5*time.Minute, "every member rolled", func(ctx context.Context) (bool, error) {
				pods := memberPods(t, f, ns, "c")
				for _, p := range pods {
					if p.DeletionTimestamp != nil || !p.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("20m")) {
						return false, fmt.Errorf("pod %s not rolled yet", p.Name)
					}
				}
				cur := getCluster(t, f, ns, "c")
				return len(pods) == 3 && len(cur.Status.Members.Outdated) == 0 && condition(cur, "Ready") == "True/ClusterHealthy",
					fmt.Errorf("%d pods, outdated %v, Ready %s, Progressing %s", len(pods), cur.Status.Members.Outdated, condition(cur, "Ready"), condition(cur, "Progressing"))
			})
			took := time.Since(start)
			gap, fails := probe.finish()
			writer.Finish(t)
			after := memberIDs(t, f, ns)
			moves := countEvents(t, f, ns, "MoveLeader")
			t.Logf("rolled 3 members in %s; longest probe gap %s (%d probe writes failed); leadership moves %d; members %v -> %v",
				took.Round(100*time.Millisecond), gap.Round(100*time.Millisecond), fails, moves, before, after)
			if gap > 5*time.Second {
				t.Errorf("the cluster went %s without a successful write", gap)
			}
			if volumes {
				if !slices.Equal(before, after) || moves != 1 {
					t.Errorf("members %v -> %v with %d leadership moves: want the same members, one move", before, after, moves)
				}
			} else if slices.ContainsFunc(after, func(id string) bool { return slices.Contains(before, id) }) {
				t.Errorf("members %v -> %v: members without volumes are replaced", before, after)
			}
		})
	}
}

// memberIDs are the member IDs status.members.details lists, sorted.
func memberIDs(t testing.TB, f *framework.Framework, ns string) []string {
	t.Helper()
	var ids []string
	for _, d := range getCluster(t, f, ns, "c").Status.Members.Details {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
}

// countEvents counts the events of reason on the EtcdCluster c.
func countEvents(t testing.TB, f *framework.Framework, ns, reason string) int {
	t.Helper()
	events := &corev1.EventList{}
	if err := f.Client.List(context.Background(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "EtcdCluster" {
			n += max(1, int(e.Count))
		}
	}
	return n
}
