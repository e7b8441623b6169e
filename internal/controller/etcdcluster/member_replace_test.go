package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestUnhealthyMemberReplaced: a voting member whose etcd stopped answering and whose pod has
// not been ready for longer than spec.memberReplacement.afterSeconds, while its two peers are
// healthy, is removed and replaced by a fresh member on a fresh volume under a new name. Its
// volume is kept (controlled by the cluster, marked with the member ID, listed in
// status.replacedVolumes), the other members' pods and volumes are untouched, a Warning event
// says why; once a retention is set and has passed, the kept volume is deleted.
func TestUnhealthyMemberReplaced(t *testing.T) {
	ctx := context.Background()
	ns, f := grownWithReplacement(t, "replace", etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](60)})
	before := map[string]types.UID{}
	for _, name := range []string{"c-0", "c-2"} {
		before["pod/"+name] = uidOf(t, ns, name, &corev1.Pod{})
		before["pvc/"+name] = uidOf(t, ns, name, &corev1.PersistentVolumeClaim{})
	}
	badVolume := uidOf(t, ns, "c-1", &corev1.PersistentVolumeClaim{})
	var badID string
	for _, m := range f.list() {
		if m.Name == "c-1" {
			badID = fmt.Sprintf("%x", m.ID)
		}
	}

	// c-1's etcd stops answering; its pod has not been ready for 30 s: not yet replaced.
	f.kill("c-1")
	unreadySince(t, ns, "c-1", 30*time.Second)
	time.Sleep(3 * time.Second) //nolint:forbidigo // proves that nothing is replaced before afterSeconds
	if got := memberNames(f, true); !slices.Contains(got, "c-1") {
		t.Fatalf("c-1 replaced after 30 s of 60: voters %v", got)
	}
	// Not ready for two minutes: replaced.
	unreadySince(t, ns, "c-1", 2*time.Minute)
	testutil.Eventually(t, testutil.Timeout, "c-1 replaced by a fresh member", testutil.NoError(func() error {
		if got := memberNames(f, true); !slices.Equal(got, []string{"c-0", "c-2", "c-3"}) {
			return fmt.Errorf("voters %v", got)
		}
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-0", "c-2", "c-3"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	}))
	waitConverged(t, ns, f, 3)
	kept := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, kept); err != nil {
		t.Fatalf("the replaced member's volume: %v", err)
	}
	cl := getCluster(t, ns, "c")
	if kept.UID != badVolume || !controlledBy(kept, cl) || kept.DeletionTimestamp != nil || kept.Annotations[etcdv1beta2.AnnotationReplacedMemberID] != badID ||
		kept.Annotations[etcdv1beta2.AnnotationReplacedAt] == "" {
		t.Fatalf("replaced volume c-1: uid %s (was %s), controller %v, deleting %v, annotations %v; want it kept, controlled, marked with member %s",
			kept.UID, badVolume, metav1.GetControllerOf(kept), kept.DeletionTimestamp, kept.Annotations, badID)
	}
	if rv := cl.Status.ReplacedVolumes; len(rv) != 1 || rv[0].Name != "c-1" || rv[0].MemberID != badID || rv[0].ReplacedAt == nil || rv[0].DeleteAfter != nil {
		t.Fatalf("status.replacedVolumes %+v; want c-1 of member %s, no deletion time", rv, badID)
	}
	for key, uid := range before {
		kind, name, _ := strings.Cut(key, "/")
		var obj client.Object = &corev1.Pod{}
		if kind == "pvc" {
			obj = &corev1.PersistentVolumeClaim{}
		}
		if got := uidOf(t, ns, name, obj); got != uid {
			t.Fatalf("%s was replaced (uid %s, was %s): only c-1 may be", key, got, uid)
		}
	}
	if uidOf(t, ns, "c-3", &corev1.PersistentVolumeClaim{}) == badVolume {
		t.Fatal("the fresh member c-3 reuses the replaced volume")
	}
	testutil.Eventually(t, testutil.Timeout, "one MemberReplaced warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonMemberReplaced, 1)
	}))

	// A retention that has passed: the kept volume goes.
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.MemberReplacement.VolumeRetentionSeconds = ptr.To[int64](0)
	})
	testutil.Eventually(t, testutil.Timeout, "the kept volume deleted", testutil.NoError(func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, pvc)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && pvc.DeletionTimestamp == nil {
			return fmt.Errorf("volume c-1 still kept")
		}
		return nil
	}))
}

// unreadySince plays the kubelet of a crash-looping member: pod name is running, its Ready
// condition False since ago.
func unreadySince(t *testing.T, ns, name string, ago time.Duration) {
	t.Helper()
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			LastTransitionTime: metav1.NewTime(time.Now().Add(-ago))}}
		return k8s.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func uidOf(t *testing.T, ns, name string, obj client.Object) types.UID {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetUID()
}

// TestSilentLearnerReplaced: a learner whose etcd never answers (the chaos kind
// member-data-altered met one stuck behind its leader's snapshot) is removed and replaced by a
// fresh member once its pod has not been ready for afterSeconds while every voting member is
// healthy; the voting members are untouched.
func TestSilentLearnerReplaced(t *testing.T) {
	ns, f := grownWithReplacement(t, "learner", etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](60)})
	before := map[string]types.UID{}
	for _, name := range []string{"c-0", "c-1", "c-2"} {
		before[name] = uidOf(t, ns, name, &corev1.Pod{})
	}
	f.kill("c-3") // the next member's etcd will never answer
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 4 })
	testutil.Eventually(t, testutil.Timeout, "c-3 added as a learner, its pod made", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Contains(got, "c-3") {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	}))
	unreadySince(t, ns, "c-3", 2*time.Minute)
	testutil.Eventually(t, testutil.Timeout, "the silent learner replaced", testutil.NoError(func() error {
		if got := memberNames(f, true); !slices.Equal(got, []string{"c-0", "c-1", "c-2", "c-4"}) {
			return fmt.Errorf("voters %v", got)
		}
		return nil
	}))
	for name, uid := range before {
		if got := uidOf(t, ns, name, &corev1.Pod{}); got != uid {
			t.Fatalf("voting member %s was touched (pod uid %s, was %s)", name, got, uid)
		}
	}
}

// grownWithReplacement creates cluster c of three members on volumes with
// spec.memberReplacement r in a new namespace and waits until it has formed.
func grownWithReplacement(t *testing.T, base string, r etcdv1beta2.MemberReplacementSpec) (string, *fakeEtcd) {
	t.Helper()
	ns := namespace(t, base)
	c := withPVC(newCluster(ns, "c", 3))
	c.Spec.MemberReplacement = &r
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	return ns, f
}

// TestVolumeMemberStuckOnLostNodeReplaced: a member on a volume whose node was lost (the taint
// manager deleted its pod, which no kubelet finishes: it stays Terminating) is replaced on a new
// volume once its pod has not been ready for afterSeconds while its peers are healthy, its own
// volume kept for a person (its data may be on the lost node); the pod stuck terminating blocks
// nothing. Before the replacement existed the cluster waited for the pod forever.
func TestVolumeMemberStuckOnLostNodeReplaced(t *testing.T) {
	ctx := context.Background()
	ns, f := grownWithReplacement(t, "lostnode", etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](60)})
	badVolume := uidOf(t, ns, "c-1", &corev1.PersistentVolumeClaim{})
	others := map[string]types.UID{"c-0": uidOf(t, ns, "c-0", &corev1.Pod{}), "c-2": uidOf(t, ns, "c-2", &corev1.Pod{})}

	// c-1's node is lost: its etcd is gone, the node controller marked the pod not ready two
	// minutes ago, the taint manager deleted it; a finalizer plays the kubelet that never
	// finishes the deletion.
	f.kill("c-1")
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, p); err != nil {
			return err
		}
		p.Finalizers = append(p.Finalizers, "test.etcd.database.coreos.com/kubelet-gone")
		return k8s.Update(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = retry.RetryOnConflict(conflictBackoff, func() error {
			p := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, p); err != nil {
				return client.IgnoreNotFound(err)
			}
			p.Finalizers = nil
			return k8s.Update(ctx, p)
		})
	})
	// Deleted first, then marked: a pass never sees the pod running and not ready (which the
	// replacement of a running member would take).
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-1"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(conflictBackoff, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, p); err != nil {
			return err
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeLost", LastTransitionTime: metav1.NewTime(time.Now().Add(-2 * time.Minute))},
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reasonTaintEviction, LastTransitionTime: metav1.Now()},
		}
		return k8s.Status().Update(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}

	readyBesideStuckPod(t, ns, f, "c-0", "c-2", "c-3")
	kept := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, kept); err != nil {
		t.Fatalf("the replaced member's volume: %v", err)
	}
	if kept.UID != badVolume || kept.DeletionTimestamp != nil || kept.Annotations[etcdv1beta2.AnnotationReplacedAt] == "" {
		t.Fatalf("volume c-1: uid %s (was %s), deleting %v, annotations %v; want it kept and marked replaced", kept.UID, badVolume, kept.DeletionTimestamp, kept.Annotations)
	}
	if uidOf(t, ns, "c-3", &corev1.PersistentVolumeClaim{}) == badVolume {
		t.Fatal("the fresh member c-3 reuses the replaced volume")
	}
	for name, uid := range others {
		if got := uidOf(t, ns, name, &corev1.Pod{}); got != uid {
			t.Fatalf("member %s was touched (pod uid %s, was %s)", name, got, uid)
		}
	}
	testutil.Eventually(t, testutil.Timeout, "one MemberReplaced warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonMemberReplaced, 1)
	}))
}

// TestEmptyDirMemberOnLostNodeReplaced: an emptyDir member whose node is lost (the Node's Ready
// condition Unknown for a minute, its etcd silent) is removed through the membership API and
// replaced under a new name without waiting for the taint manager to evict its pod (envtest has
// none: before the fix the member was waited for), its pod left Terminating on the lost node,
// the other members untouched.
func TestEmptyDirMemberOnLostNodeReplaced(t *testing.T) {
	ctx := context.Background()
	ns, f := grown(t, "lostnode-emptydir", 3)
	others := map[string]types.UID{"c-0": uidOf(t, ns, "c-0", &corev1.Pod{}), "c-2": uidOf(t, ns, "c-2", &corev1.Pod{})}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-lost"}}
	if err := k8s.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		LastHeartbeatTime: metav1.NewTime(time.Now().Add(-2 * time.Minute)), LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
	if err := k8s.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	lost := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-1"}}
	if err := k8s.SubResource("binding").Create(ctx, lost, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "c-1"},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	f.kill("c-1") // the fake kubelet marks its pod not ready, as the node controller would

	readyBesideStuckPod(t, ns, f, "c-0", "c-2", "c-3")
	p := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, p); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod c-1 on the lost node: %v, deletion %v; want it deleted by the operator and left Terminating (no kubelet finishes it)", err, p.DeletionTimestamp)
	}
	for name, uid := range others {
		if got := uidOf(t, ns, name, &corev1.Pod{}); got != uid {
			t.Fatalf("member %s was touched (pod uid %s, was %s)", name, got, uid)
		}
	}
}

// readyBesideStuckPod waits until the voting members are want (the lost one replaced by a fresh
// member) and cluster c is Ready with them while the lost member's pod stays Terminating: it
// holds nothing back.
func readyBesideStuckPod(t *testing.T, ns string, f *fakeEtcd, want ...string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, fmt.Sprintf("voting members %v", want), testutil.NoError(func() error {
		if got := memberNames(f, true); !slices.Equal(got, want) {
			return fmt.Errorf("voters %v", got)
		}
		return nil
	}))
	testutil.Eventually(t, testutil.Timeout, "Ready beside the stuck pod", testutil.NoError(func() error {
		cl := getCluster(t, ns, "c")
		if condition(cl, "Ready") != "True/ClusterHealthy" || !slices.Equal(cl.Status.Members.Ready, want) {
			return fmt.Errorf("Ready %s, members %+v, pods %v", condition(cl, "Ready"), cl.Status.Members, podNames(t, ns))
		}
		return nil
	}))
}
