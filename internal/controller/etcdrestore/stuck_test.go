package etcdrestore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestStuckOldPodsAreNamedAndForceDeletedOnlyOnRequest: the usual disaster, the nodes of the
// replaced cluster's members are gone, so their pods stay Terminating (envtest runs no kubelet:
// a pod on a node never confirms its stop) and the old cluster's deletion never completes. The
// restore says which pods on which nodes (condition OldPodsStuck) and waits; it force-deletes
// them only once a person annotates it, and then only the pods the old cluster controls.
func TestStuckOldPodsAreNamedAndForceDeletedOnlyOnRequest(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		pod := member.NewPod(old, name, old.Spec.Version, "new", "")
		pod.OwnerReferences = []metav1.OwnerReference{controllerRef(old)}
		pod.Spec.NodeName = "node-gone"
		create(t, pod)
	}
	// Someone else's pod with the cluster's labels, stuck as well: never the restore's to delete.
	stranger := member.NewPod(old, "prod-7", old.Spec.Version, "new", "")
	stranger.Spec.NodeName = "node-gone"
	create(t, stranger)
	if err := k8s.Delete(t.Context(), stranger); err != nil {
		t.Fatal(err)
	}

	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	checkPasses(t, ns, "prod", restoredOK)
	// The old cluster is deleted; its operator stops its members (here played: their pods get
	// a deletion timestamp their lost node never confirms).
	testutil.Eventually(t, testutil.Timeout, "old cluster deleted", func() (bool, string) {
		c, err := getCluster(t, ns, "prod")
		return err == nil && c.UID == old.UID && c.DeletionTimestamp != nil, fmt.Sprint(err)
	})
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		p, err := getPod(t, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Delete(t.Context(), p, client.GracePeriodSeconds(1)); err != nil {
			t.Fatal(err)
		}
	}
	var cond *metav1.Condition
	testutil.Eventually(t, testutil.Timeout, "OldPodsStuck", func() (bool, string) {
		cond = meta.FindStatusCondition(getRestore(t, ns, "prod").Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck)
		return cond != nil && cond.Status == metav1.ConditionTrue, "not yet"
	})
	for _, want := range []string{"prod-0 (node node-gone", "prod-1 (node node-gone", "prod-2 (node node-gone", etcdv1beta2.AnnotationForceDeleteStuckPods + "=true"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("OldPodsStuck %q lacks %q", cond.Message, want)
		}
	}
	if strings.Contains(cond.Message, "prod-7") {
		t.Errorf("OldPodsStuck %q names a pod the old cluster does not control", cond.Message)
	}
	// Without the opt-in nothing is forced: the pods are still there, Terminating.
	if p, err := getPod(t, ns, "prod-0"); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("old pod prod-0: %v", err)
	}

	rs := getRestore(t, ns, "prod")
	rs.Annotations[etcdv1beta2.AnnotationForceDeleteStuckPods] = "true"
	if err := k8s.Update(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		testutil.Eventually(t, testutil.Timeout, "stuck pod "+name+" force-deleted", func() (bool, string) {
			_, err := getPod(t, ns, name)
			return apierrors.IsNotFound(err), "still there"
		})
	}
	if p, err := getPod(t, ns, "prod-7"); err != nil || p.UID != stranger.UID {
		t.Fatalf("the stranger's pod was force-deleted: %v", err)
	}
	// The old cluster's deletion completes (here: the garbage collector's part, played), and
	// the restore goes on.
	waitRestoring(t, ns, "prod", old.UID)
}

// TestRetryReusesTheSavedTemplate: an in-place restore timed out while the old cluster was
// still being deleted (its pods stuck), so it never re-created the cluster; once the old
// cluster is gone, a retry without clusterTemplate restores it with the spec the first restore
// saved, instead of failing TemplateNotFound.
func TestRetryReusesTheSavedTemplate(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	old.Labels = map[string]string{"team": "payments"}
	if err := k8s.Update(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	create(t, s.restore(ns, "first", "prod", "etcd.backup"))
	checkPasses(t, ns, "first", restoredOK)
	waitProgress(t, ns, "first", "waiting for the old EtcdCluster prod to be deleted")
	pastDeadline(t, ns, "first")
	waitCondition(t, ns, "first", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonTimeout)
	// The old cluster's deletion completes at last (the garbage collector's part, played).
	c, err := getCluster(t, ns, "prod")
	if err != nil {
		t.Fatal(err)
	}
	c.Finalizers = nil
	if err := k8s.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "old cluster gone", func() (bool, string) {
		_, err := getCluster(t, ns, "prod")
		return apierrors.IsNotFound(err), "still there"
	})

	create(t, s.restore(ns, "retry", "prod", "etcd.backup"))
	var next *etcdv1beta2.EtcdCluster
	testutil.Eventually(t, testutil.Timeout, "retry's cluster", func() (bool, string) {
		next, err = getCluster(t, ns, "prod")
		if err != nil {
			r := getRestore(t, ns, "retry")
			return false, fmt.Sprintf("%v; retry %s %v", err, r.Status.Phase, r.Status.Conditions)
		}
		return ours(next, getRestore(t, ns, "retry")), "not the retry's"
	})
	if next.Spec.Size != 3 || next.Spec.Pod == nil || next.Spec.Pod.PersistentVolumeClaimSpec == nil || next.Labels["team"] != "payments" {
		t.Fatalf("retry's cluster %+v %+v: want the replaced cluster's spec and labels", next.Labels, next.Spec)
	}
	if c := meta.FindStatusCondition(getRestore(t, ns, "retry").Status.Conditions, etcdv1beta2.RestoreConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("retry failed: %s", c.Message)
	}
}

// TestOldClusterDeletedOnlyOnceItsMembersStopped: an in-place restore of a cluster on volumes
// deletes it only once the etcd operator has stopped its members with the one-second grace
// period (after retaining its volumes): deleted by the garbage collector, each pod would get
// its own grace period and the leader would spend about 7 s handing leadership to members that
// stop too. Until then the restore says what it waits for and the cluster stays.
func TestOldClusterDeletedOnlyOnceItsMembersStopped(t *testing.T) {
	ns := namespace(t)
	holdMembers.Store(ns, true)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		pod := member.NewPod(old, name, old.Spec.Version, "new", "")
		pod.OwnerReferences = []metav1.OwnerReference{controllerRef(old)}
		pod.Spec.NodeName = "node-a" // scheduled: a deletion waits for a kubelet (none here)
		create(t, pod)
	}
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	checkPasses(t, ns, "prod", restoredOK)
	waitProgress(t, ns, "prod", "waiting for the etcd operator to stop the members of EtcdCluster prod (prod-0, prod-1, prod-2)")
	testutil.Consistently(t, 2*time.Second, "the old cluster stays while its members run", func() (bool, string) {
		c, err := getCluster(t, ns, "prod")
		return err == nil && c.UID == old.UID && c.DeletionTimestamp == nil, fmt.Sprint(err)
	})

	holdMembers.Delete(ns)
	testutil.Eventually(t, testutil.Timeout, "old cluster deleted", func() (bool, string) {
		c, err := getCluster(t, ns, "prod")
		return apierrors.IsNotFound(err) || (err == nil && c.UID == old.UID && c.DeletionTimestamp != nil), fmt.Sprint(err)
	})
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		p, err := getPod(t, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
			t.Errorf("pod %s: deletion grace period %v, want 1 s", name, p.DeletionGracePeriodSeconds)
		}
	}
}
