//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Bounds of TestCoreosTakeOverInPlace.
const (
	// takeOverBound: three members added as learners and promoted, three coreos members
	// removed (leadership moved off each first), one at a time.
	takeOverBound = 6 * time.Minute
	// coreosHoldFor is how long the held cluster is watched for any change after
	// CoreosMembersFound is set.
	coreosHoldFor = 15 * time.Second
	// takeOverMaxGap is the longest the cluster may go without a successful probe write: one
	// probe that fails, and no more. The probe puts every 500 ms with a 2 s timeout, so a single
	// put that times out (its connection was to the member being removed, or went through the
	// client Service to it before kube-proxy dropped it) spans about 3 s between two successes:
	// 3.1 s in CI's rehearsal of 2026-11-29 (r32, the takeover 79 s under load), 0.6-1.5 s in six
	// runs alone. Two failed probes in a row (5.5 s and more) are what a lost quorum would cost at
	// the least. TestRollingSpecChange bounds the same probe the same way.
	takeOverMaxGap = 5 * time.Second
	// takeOverKeys is how many keys are written before the takeover and read after it.
	takeOverKeys = 200
	// refusedVersion is the etcd of TestCoreosTakeOverRefusedOldEtcd's coreos pods: before 3.5,
	// and an image the local cluster does not have (the pods never pull it).
	refusedVersion = "3.4.27"
	// refusedHoldFor is how long the refused cluster is watched for any change.
	refusedHoldFor = 10 * time.Second
)

// TestCoreosTakeOverInPlace (issue 32): a 3-member etcd 3.5 cluster made as coreos/etcd-operator
// v0.9.4 makes it (its Services and member pods, framework.CoreosMemberPod) under an EtcdCluster
// that was paused while they were made, as when a user swaps the coreos operator's Deployment
// for this one. Unpaused, the cluster is held untouched (Degraded CoreosMembersFound: the same
// pods, no restart, no member pod or Service of this operator). Annotated take-over=true, under
// a bounded write load and a probe writing every 500 ms, it is taken over in place: members
// c-0, c-1 and c-2 of this operator replace the coreos members one at a time, never more than
// size+1 members in etcd, and the cluster stays writable (no probe gap over 5 s). Afterwards
// etcd has exactly those three started voting members, the same cluster ID, every key,
// acknowledged write and lease written before, a revision past the one before, and the coreos
// Services (the same objects) still serve it.
func TestCoreosTakeOverInPlace(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-takeover")

	// 1-3. The EtcdCluster, paused (the operator's first active pass comes after the coreos
	// objects exist), the coreos Services and member pods, the coreos cluster formed; data to
	// find again after the takeover.
	c := newCluster(ns, "c", 3)
	c.Spec.Version = oldVersion
	coreos := f.CreateCoreosCluster(t, c, oldVersion, 3)
	svcUIDs := map[string]types.UID{}
	for _, name := range []string{"c", "c-client"} {
		svcUIDs[name] = getObject(t, f, ns, name, &corev1.Service{}).GetUID()
	}
	podUIDs := map[string]types.UID{}
	for _, name := range coreos {
		podUIDs[name] = getObject(t, f, ns, name, &corev1.Pod{}).GetUID()
	}
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	ml, err := cli.MemberList(ctx)
	cancel()
	if err != nil {
		t.Fatalf("member list of the coreos cluster: %v", err)
	}
	clusterID := ml.Header.ClusterId
	coreosIDs := map[string]uint64{}
	for _, m := range ml.Members {
		coreosIDs[m.Name] = m.ID
	}
	for i := range takeOverKeys {
		put(t, cli, takeOverKey(i), fmt.Sprint("v", i))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		cancel()
		t.Fatalf("granting a lease: %v", err)
	}
	resp, err := cli.Put(ctx, "/takeover/leased", "leased", clientv3.WithLease(lease.ID))
	cancel()
	if err != nil {
		t.Fatalf("putting the leased key: %v", err)
	}
	revBefore := resp.Header.Revision
	t.Logf("coreos cluster %x formed: members %v, %d keys and a leased key (lease %x) written, revision %d", clusterID, coreosIDs, takeOverKeys, lease.ID, revBefore)

	// 4. Unpaused, the cluster is held: Degraded CoreosMembersFound, nothing changed.
	// The paused passes set CoreosMembersFound already: the status of the unpaused generation
	// is what says that an active pass held the cluster.
	unpaused := time.Now()
	gen := patchCluster(t, f, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false }).Generation
	framework.Eventually(t, 2*time.Minute, "Degraded CoreosMembersFound", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, cur); err != nil {
			return false, err
		}
		if got := condition(cur, etcdv1beta2.ClusterConditionDegraded); got != "True/"+etcdv1beta2.ReasonCoreosMembersFound || cur.Status.ObservedGeneration < gen {
			return false, fmt.Errorf("Degraded %s, observed generation %d of %d, conditions %v", got, cur.Status.ObservedGeneration, gen, conds(cur))
		}
		return true, nil
	})
	heldAt := getCluster(t, f, ns, "c")
	t.Logf("held %s after unpausing (generation %d), conditions %v: %s", time.Since(unpaused).Round(100*time.Millisecond), gen, conds(heldAt), degradedMessage(heldAt))
	for deadline := time.Now().Add(coreosHoldFor); time.Now().Before(deadline); time.Sleep(time.Second) {
		checkHeld(t, f, ns, podUIDs, svcUIDs)
	}
	if got := getCluster(t, f, ns, "c"); condition(got, etcdv1beta2.ClusterConditionDegraded) != "True/"+etcdv1beta2.ReasonCoreosMembersFound {
		t.Fatalf("after %s held: Degraded %s, conditions %v", coreosHoldFor, condition(got, etcdv1beta2.ClusterConditionDegraded), conds(got))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	ml, err = cli.MemberList(ctx)
	cancel()
	if err != nil {
		t.Fatalf("member list of the held cluster: %v", err)
	}
	held := map[string]uint64{}
	for _, m := range ml.Members {
		held[m.Name] = m.ID
	}
	if !maps.Equal(held, coreosIDs) {
		t.Fatalf("members of the held cluster changed: %x, want %x", held, coreosIDs)
	}

	// 5. The write load and the probe, then the go-ahead.
	writer := framework.StartWriter(etcdClient(t, f, nil, clientEndpoint(ns, "c")), "/takeover/w/")
	t.Cleanup(func() { writer.Stop() }) // bounded on its own; stopped early if the test fails first
	probe := watchAvailability(etcdClient(t, f, nil, clientEndpoint(ns, "c")))
	probing := true
	t.Cleanup(func() {
		if probing {
			probe.finish()
		}
	})
	start := time.Now()
	patchCluster(t, f, ns, func(c *etcdv1beta2.EtcdCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[etcdv1beta2.AnnotationTakeOver] = "true"
	})

	// 6. Taken over: exactly c-0..c-2, as pods and as started voting members; never more than
	// size+1 members on the way.
	want := []string{"c-0", "c-1", "c-2"}
	maxMembers, lastMembers, lastConds := 0, "", ""
	scaling := map[string]bool{} // the Scaling reasons seen on the way
	framework.Eventually(t, takeOverBound, "the cluster taken over", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, cur); err == nil {
			if s := strings.Join(conds(cur), " "); s != lastConds {
				t.Logf("+%s conditions %s", time.Since(start).Round(100*time.Millisecond), s)
				lastConds = s
			}
			if sc := meta.FindStatusCondition(cur.Status.Conditions, etcdv1beta2.ClusterConditionScaling); sc != nil && sc.Status == metav1.ConditionTrue {
				scaling[sc.Reason] = true
			}
		}
		mctx, mcancel := context.WithTimeout(ctx, 3*time.Second)
		ml, err := cli.MemberList(mctx)
		mcancel()
		if err != nil {
			return false, fmt.Errorf("member list: %w", err)
		}
		maxMembers = max(maxMembers, len(ml.Members))
		desc := describeMembers(ml)
		if desc != lastMembers {
			t.Logf("+%s members %s", time.Since(start).Round(100*time.Millisecond), desc)
			lastMembers = desc
		}
		if len(ml.Members) > 4 {
			t.Fatalf("%d members (%s): more than size+1", len(ml.Members), desc)
		}
		podNames, err := f.DescribePods(ctx, ns)
		if err != nil {
			return false, err
		}
		names, _ := memberNames(ml)
		if !slices.Equal(podNames, want) || !slices.Equal(names, want) {
			return false, fmt.Errorf("pods %v, members %s; want %v", podNames, desc, want)
		}
		return true, nil
	})
	// The status says what happens: a takeover, not a scale-down while the extra member is in.
	if !scaling[etcdv1beta2.ReasonTakingOver] || scaling[etcdv1beta2.ReasonScalingDown] {
		t.Errorf("Scaling reasons on the way: %v, want %s and never %s", slices.Sorted(maps.Keys(scaling)), etcdv1beta2.ReasonTakingOver, etcdv1beta2.ReasonScalingDown)
	}
	tookOver := time.Since(start)
	waitAvailable(t, f, ns, "c", 3, 2*time.Minute)
	available := time.Since(start)

	// 7. Nothing lost, nothing moved that should stay.
	gap, fails := probe.finish()
	probing = false
	writer.Finish(t)
	t.Logf("MEASURE coreos takeover (3 members, etcd %s): members replaced in %s, Available after %s; at most %d members; longest probe gap %s (%d probe writes failed)",
		oldVersion, tookOver.Round(100*time.Millisecond), available.Round(100*time.Millisecond), maxMembers, gap.Round(100*time.Millisecond), fails)
	if gap > takeOverMaxGap {
		t.Errorf("the cluster went %s without a successful write (bound %s)", gap.Round(100*time.Millisecond), takeOverMaxGap)
	}
	for _, p := range memberPods(t, f, ns, "c") {
		if _, ok := p.Labels[framework.CoreosNodeLabel]; ok {
			t.Errorf("pod %s carries coreos' label %s: %v", p.Name, framework.CoreosNodeLabel, p.Labels)
		}
	}
	checkMembers(t, f, nil, "http", ns, "c", 3, takeOverKey(takeOverKeys-1), fmt.Sprint("v", takeOverKeys-1))

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ml, err = cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	if ml.Header.ClusterId != clusterID {
		t.Errorf("cluster ID %x after the takeover, want the coreos cluster's %x", ml.Header.ClusterId, clusterID)
	}
	got, err := cli.Get(ctx, "/takeover/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("reading the keys: %v", err)
	}
	if len(got.Kvs) != takeOverKeys {
		t.Errorf("%d keys under /takeover/k/, want %d", len(got.Kvs), takeOverKeys)
	}
	for _, kv := range got.Kvs {
		var i int
		if _, err := fmt.Sscanf(string(kv.Key), "/takeover/k/%04d", &i); err != nil || string(kv.Value) != fmt.Sprint("v", i) {
			t.Errorf("key %s = %q", kv.Key, kv.Value)
		}
	}
	if got.Header.Revision <= revBefore {
		t.Errorf("revision %d after the takeover, want past %d", got.Header.Revision, revBefore)
	}
	leased, err := cli.Get(ctx, "/takeover/leased")
	if err != nil || len(leased.Kvs) != 1 || clientv3.LeaseID(leased.Kvs[0].Lease) != lease.ID {
		t.Errorf("the leased key after the takeover: %v %v, want it on lease %x", leased, err, lease.ID)
	}
	ttl, err := cli.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatalf("lease %x after the takeover: %v", lease.ID, err)
	}
	if ttl.TTL <= 0 || len(ttl.Keys) != 1 {
		t.Errorf("lease %x after the takeover: TTL %d s, keys %q; want it alive with its key", lease.ID, ttl.TTL, ttl.Keys)
	}
	for name, uid := range svcUIDs {
		svc := &corev1.Service{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil || svc.UID != uid || svc.DeletionTimestamp != nil {
			t.Errorf("Service %s after the takeover: %v, uid %s deleting %v; want the coreos one (%s)", name, err, svc.UID, svc.DeletionTimestamp, uid)
		}
	}
	t.Logf("cluster %x: %d keys, leased key with %d s left, revision %d -> %d", clusterID, len(got.Kvs), ttl.TTL, revBefore, got.Header.Revision)
}

// TestCoreosTakeOverRefusedOldEtcd (issue 32): a 3-member cluster made as coreos/etcd-operator
// v0.9.4 makes it, whose pods name etcd 3.4.27, under an EtcdCluster annotated take-over=true:
// the operator refuses the takeover (Degraded TakeOverRefused, naming 3.4.27 and 3.5) and
// changes nothing (the same pods and Services, no member pod of its own). It decides from the
// pods' spec alone: their image is one the local cluster does not have, and with
// imagePullPolicy Never nothing is pulled and no etcd runs (the pods stay in
// ErrImageNeverPull).
func TestCoreosTakeOverRefusedOldEtcd(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-takeover-refused")

	c := newCluster(ns, "c", 3)
	c.Spec.Version = oldVersion
	c.Annotations = map[string]string{etcdv1beta2.AnnotationTakeOver: "true"}
	coreos := f.CreateCoreosMembers(t, c, refusedVersion, 3, func(p *corev1.Pod) {
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	})
	podUIDs := map[string]types.UID{}
	for _, name := range coreos {
		podUIDs[name] = getObject(t, f, ns, name, &corev1.Pod{}).GetUID()
	}
	svcUIDs := map[string]types.UID{}
	for _, name := range []string{"c", "c-client"} {
		svcUIDs[name] = getObject(t, f, ns, name, &corev1.Service{}).GetUID()
	}

	// Unpaused: the status of that generation refuses the takeover.
	gen := patchCluster(t, f, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false }).Generation
	var msg string
	framework.Eventually(t, time.Minute, "Degraded TakeOverRefused", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, cur); err != nil {
			return false, err
		}
		if got := condition(cur, etcdv1beta2.ClusterConditionDegraded); got != "True/"+etcdv1beta2.ReasonTakeOverRefused || cur.Status.ObservedGeneration < gen {
			return false, fmt.Errorf("Degraded %s, observed generation %d of %d, conditions %v", got, cur.Status.ObservedGeneration, gen, conds(cur))
		}
		msg = degradedMessage(cur)
		return true, nil
	})
	t.Logf("refused: %s", msg)
	if !strings.Contains(msg, refusedVersion) || !strings.Contains(msg, "3.5") {
		t.Errorf("Degraded message %q: want it to name etcd %s and 3.5", msg, refusedVersion)
	}

	// Nothing changes: the coreos pods (the same objects, not being deleted) and Services alone,
	// no pod c-0 or any other of this operator's.
	for deadline := time.Now().Add(refusedHoldFor); time.Now().Before(deadline); time.Sleep(time.Second) {
		checkHeld(t, f, ns, podUIDs, svcUIDs)
	}
	if got := getCluster(t, f, ns, "c"); condition(got, etcdv1beta2.ClusterConditionDegraded) != "True/"+etcdv1beta2.ReasonTakeOverRefused {
		t.Fatalf("after %s: Degraded %s, conditions %v", refusedHoldFor, condition(got, etcdv1beta2.ClusterConditionDegraded), conds(got))
	}
}

// takeOverKey is key i of the data written before the takeover.
func takeOverKey(i int) string { return fmt.Sprintf("/takeover/k/%04d", i) }

// getObject reads object name of ns into obj and returns it, failing the test on error.
func getObject(t testing.TB, f *framework.Framework, ns, name string, obj client.Object) client.Object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("getting %T %s/%s: %v", obj, ns, name, err)
	}
	return obj
}

// patchCluster applies change to EtcdCluster c of ns with a merge patch and returns the
// patched object.
func patchCluster(t testing.TB, f *framework.Framework, ns string, change func(*etcdv1beta2.EtcdCluster)) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := getCluster(t, f, ns, "c")
	before := c.DeepCopy()
	change(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
		t.Fatalf("patching EtcdCluster %s/c: %v", ns, err)
	}
	return c
}

// memberNames are the names of the started voting members, sorted (a learner or a member not
// started yet is named "<learner>" or "<unstarted>", so that it never matches), and the list
// described.
func memberNames(ml *clientv3.MemberListResponse) ([]string, string) {
	var names []string
	for _, m := range ml.Members {
		switch {
		case m.Name == "":
			names = append(names, "<unstarted>")
		case m.IsLearner:
			names = append(names, "<learner>")
		default:
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	return names, describeMembers(ml)
}

// describeMembers is the member list as name[(learner)] items, sorted.
func describeMembers(ml *clientv3.MemberListResponse) string {
	return "[" + strings.Join(framework.DescribeMembers(ml.Members), " ") + "]"
}

// checkHeld fails the test unless the namespace holds exactly the coreos pods (the same
// objects, not deleted, their containers never restarted) and the coreos Services (the same).
func checkHeld(t testing.TB, f *framework.Framework, ns string, podUIDs, svcUIDs map[string]types.UID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]types.UID{}
	for _, p := range pods.Items {
		seen[p.Name] = p.UID
		if p.DeletionTimestamp != nil {
			t.Fatalf("held cluster: pod %s is being deleted", p.Name)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 || cs.State.Terminated != nil {
				t.Fatalf("held cluster: pod %s container %s restarted %d times, state %+v", p.Name, cs.Name, cs.RestartCount, cs.State)
			}
		}
	}
	if !maps.Equal(seen, podUIDs) {
		t.Fatalf("held cluster: pods %v, want only the coreos pods %v", seen, podUIDs)
	}
	svcs := &corev1.ServiceList{}
	if err := f.Client.List(ctx, svcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen = map[string]types.UID{}
	for _, s := range svcs.Items {
		seen[s.Name] = s.UID
	}
	if !maps.Equal(seen, svcUIDs) {
		t.Fatalf("held cluster: Services %v, want only the coreos Services %v", seen, svcUIDs)
	}
}
