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

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Bounds of etcd-operator-killed-mid-takeover.
const (
	// takeOverMaxMembers is size+1: a takeover adds a member of its own before each coreos
	// member goes, never two.
	takeOverMaxMembers = 4
	// takeOverKillAfterMax is the last membership change the kill may follow (1..8: c-0 added,
	// c-0 promoted, the first coreos member removed, c-1 added, c-1 promoted, the second
	// removed, c-2 added, c-2 promoted: the kill after the eighth lands before leadership moves
	// off the last coreos member and it is removed, the ninth change).
	takeOverKillAfterMax = 8
	// memberPollInterval is how often the member list is read during the takeover: a step of
	// the operator takes a pass (and a learner seconds to catch up), so a change is seen well
	// before the next.
	memberPollInterval = 100 * time.Millisecond
)

// coreosHeld (setup of etcd-operator-killed-mid-takeover) makes c a running 3-member cluster
// shaped as coreos/etcd-operator v0.9.4 makes it (framework.CreateCoreosCluster), on the 3.5
// release the e2e's coreos clusters run, with spec.version the same, and unpauses it: without
// the take-over annotation the operator holds it untouched (Degraded CoreosMembersFound for the
// unpaused generation). The load then runs through the coreos client Service.
func coreosHeld(t *testing.T, f *framework.Framework, c *etcdv1beta2.EtcdCluster) {
	t.Helper()
	c.Spec.Version = upgradeFrom
	coreos := f.CreateCoreosCluster(t, c, upgradeFrom, int(c.Spec.Size))
	f.SetPaused(t, c.Namespace, c.Name, false)
	var msg string
	framework.Eventually(t, 2*time.Minute, "Degraded CoreosMembersFound", func(ctx context.Context) (bool, error) {
		cur, err := f.GetCluster(ctx, c.Namespace, c.Name)
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(cur.Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != etcdv1beta2.ReasonCoreosMembersFound || cur.Spec.Paused || cur.Status.ObservedGeneration < cur.Generation {
			return false, fmt.Errorf("Degraded %+v, paused %t, observed generation %d of %d", cond, cur.Spec.Paused, cur.Status.ObservedGeneration, cur.Generation)
		}
		msg = cond.Message
		return true, nil
	})
	t.Logf("coreos cluster %v held: %s", coreos, msg)
}

// operatorKilledMidTakeOver annotates the held coreos cluster take-over=true and kills the etcd
// operator's pod right after a seeded membership change k (1..8) of the takeover, as the member
// list shows it: a learner of its own added, promoted, or a coreos member removed. The next
// operator must finish the takeover from where it was: pods c-0, c-1 and c-2 alone, no coreos
// pod, etcd's members exactly those three, started voters, the cluster ID unchanged, never more
// than size+1 members in the list and no stray member at the end. Heal counts from the kill.
func operatorKilledMidTakeOver(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	k := 1 + rng.IntN(takeOverKillAfterMax)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	ml, err := cli.MemberList(t.Context())
	if err != nil {
		t.Fatalf("member list of the held cluster: %v", err)
	}
	clusterID := ml.Header.ClusterId
	w := watchMembers(cli, ml)
	defer w.stop()

	c, err := f.GetCluster(t.Context(), ns, "c")
	if err != nil {
		t.Fatal(err)
	}
	before := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1beta2.AnnotationTakeOver] = "true"
	if err := f.Client.Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	t.Logf("fault: take-over=true; the etcd operator is killed after membership change %d", k)

	select {
	case <-w.reached(k):
	case <-time.After(healTimeout):
		t.Fatalf("%d membership changes in %s, waited for %d: %s", w.count(), healTimeout, k, w.history())
	}
	killOperatorNow(t, f, "etcd-operator")
	killed := time.Now()
	n, at := w.count(), w.current()
	t.Logf("fault: the etcd operator killed %s after the go-ahead, after %d membership changes (members %s)", killed.Sub(start).Round(100*time.Millisecond), n, at)
	f.WaitForDeploymentAvailable(t, framework.OperatorNamespace, "etcd-operator", 3*time.Minute)
	waitTakenOver(t, f, ns, cli)
	waitHealed(t, f, ns, 3)
	tookOver := time.Since(killed)
	w.stop()
	t.Logf("membership during the takeover: %s", w.history())
	if most := w.most(); most > takeOverMaxMembers {
		t.Fatalf("%d members in the list at one point: more than size+1 (%d): %s", most, takeOverMaxMembers, w.history())
	}

	// No stray member: every member in etcd has a pod, every pod is a member.
	ml, err = cli.MemberList(t.Context())
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	var members, pods []string
	for _, m := range ml.Members {
		members = append(members, m.Name)
	}
	for _, p := range listMembers(f, ns) {
		pods = append(pods, p.Name)
	}
	slices.Sort(members)
	slices.Sort(pods)
	if !slices.Equal(members, pods) {
		t.Fatalf("members %v, pods %v: a stray member or pod", members, pods)
	}
	if ml.Header.ClusterId != clusterID {
		t.Fatalf("cluster ID %x after the takeover, want the coreos cluster's %x", ml.Header.ClusterId, clusterID)
	}
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed after %d changes (drawn %d; members %s), %s after the go-ahead; taken over %s after the kill, at most %d members",
		n, k, at, killed.Sub(start).Round(100*time.Millisecond), tookOver.Round(100*time.Millisecond), w.most())}
}

// waitTakenOver waits until the takeover finished: the namespace's pods are c-0, c-1 and c-2
// alone (none terminating, none a coreos pod), and etcd's members exactly those three, started
// voters.
func waitTakenOver(t *testing.T, f *framework.Framework, ns string, cli *clientv3.Client) {
	t.Helper()
	want := []string{"c-0", "c-1", "c-2"}
	framework.Eventually(t, healTimeout, "the takeover finished", func(ctx context.Context) (bool, error) {
		podNames, err := f.DescribePods(ctx, ns)
		if err != nil {
			return false, err
		}
		mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ml, err := cli.MemberList(mctx)
		cancel()
		if err != nil {
			return false, fmt.Errorf("member list: %w", err)
		}
		members := framework.DescribeMembers(ml.Members)
		return slices.Equal(podNames, want) && slices.Equal(members, want), fmt.Errorf("pods %v, members %v; want %v", podNames, members, want)
	})
}

// memberWatch reads the member list every memberPollInterval and counts the membership changes
// it shows against the list it started from: a member added, a member promoted, a member
// removed. Each is counted once, however often it is seen, so a poll answered by a member that
// is behind (it shows an earlier list) adds nothing: the count only grows.
type memberWatch struct {
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu       sync.Mutex
	initial  map[uint64]bool
	added    map[uint64]bool
	promoted map[uint64]bool
	removed  map[uint64]bool
	maxSeen  int
	last     string
	log      []string
	waiters  map[int]chan struct{}
}

func watchMembers(cli *clientv3.Client, first *clientv3.MemberListResponse) *memberWatch {
	w := &memberWatch{done: make(chan struct{}), initial: map[uint64]bool{}, added: map[uint64]bool{}, promoted: map[uint64]bool{},
		removed: map[uint64]bool{}, waiters: map[int]chan struct{}{}}
	for _, m := range first.Members {
		w.initial[m.ID] = true
	}
	start := time.Now()
	w.see(first.Members, 0)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.done:
				return
			case <-time.After(memberPollInterval):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ml, err := cli.MemberList(ctx)
			cancel()
			if err == nil {
				w.see(ml.Members, time.Since(start))
			}
		}
	}()
	return w
}

// see records one member list.
func (w *memberWatch) see(members []*etcdserverpb.Member, at time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	present := map[uint64]bool{}
	for _, m := range members {
		present[m.ID] = true
		if !w.initial[m.ID] {
			w.added[m.ID] = true
			if !m.IsLearner {
				w.promoted[m.ID] = true
			}
		}
	}
	for id := range w.initial {
		if !present[id] {
			w.removed[id] = true
		}
	}
	w.maxSeen = max(w.maxSeen, len(members))
	if d := strings.Join(framework.DescribeMembers(members), " "); d != w.last {
		w.last = d
		w.log = append(w.log, fmt.Sprintf("+%s [%s]", at.Round(100*time.Millisecond), d))
	}
	n := w.changes()
	for k, ch := range w.waiters {
		if n >= k {
			close(ch)
			delete(w.waiters, k)
		}
	}
}

// changes is the count so far; w.mu held.
func (w *memberWatch) changes() int { return len(w.added) + len(w.promoted) + len(w.removed) }

// reached is closed once k changes were seen.
func (w *memberWatch) reached(k int) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if w.changes() >= k {
		close(ch)
	} else {
		w.waiters[k] = ch
	}
	return ch
}

func (w *memberWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes()
}

// current is the last member list seen, described.
func (w *memberWatch) current() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return "[" + w.last + "]"
}

// most is the largest member list seen.
func (w *memberWatch) most() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxSeen
}

// history is every distinct member list seen, with when (from the start of the watch).
func (w *memberWatch) history() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.log, ", ")
}

// stop ends the polling; calling it again does nothing.
func (w *memberWatch) stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.wg.Wait()
}
