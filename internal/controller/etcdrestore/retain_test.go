package etcdrestore

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestFailedSeedKeepsVolumesAndSaysHowToRetry: an in-place restore whose seed fails after the
// old cluster was deleted keeps the old volumes, lists them and says how to retry; the retry
// replaces the memberless cluster and restores its members above every old name.
func TestFailedSeedKeepsVolumesAndSaysHowToRetry(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	create(t, s.restore(ns, "first", "prod", "etcd.backup"))
	checkPasses(t, ns, "first", restoredOK)
	c := waitRestoring(t, ns, "prod", old.UID)
	if b := c.Spec.Bootstrap.Restore; strings.Join(b.Members, ",") != "prod-3,prod-4,prod-5" {
		t.Fatalf("restored members %v, want prod-3..5 (above the retained prod-0..2)", b.Members)
	}
	// The etcd operator made the members' volumes, and could not restore into them.
	for _, name := range []string{"prod-3", "prod-4", "prod-5"} {
		memberPVC(t, c, name)
	}
	restoreFailedIn(t, c, etcdv1beta2.ReasonInsufficientStorage, "member prod-3 could not restore the backup: the data volume has 10 MiB free")
	rs := waitCondition(t, ns, "first", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonInsufficientStorage)
	for _, want := range []string{"10 MiB free", "prod-0, prod-1, prod-2", "create a new EtcdRestore with etcdCluster.name prod", etcdv1beta2.AnnotationRetainedBy} {
		if !strings.Contains(rs.Status.Reason, want) {
			t.Errorf("failure %q lacks %q", rs.Status.Reason, want)
		}
	}
	for i := range 3 {
		if pvc, err := getPVC(t, ns, fmt.Sprintf("prod-%d", i)); gone(err, pvc) || !retainedBy(pvc, rs) || len(pvc.OwnerReferences) > 0 {
			t.Fatalf("retained volume prod-%d not kept after the failure: %v", i, err)
		}
	}

	create(t, s.restore(ns, "retry", "prod", "etcd.backup"))
	checkPasses(t, ns, "retry", restoredOK)
	next := waitRestoring(t, ns, "prod", c.UID)
	if b := next.Spec.Bootstrap.Restore; b.RestoreName != "retry" || b.SeedMember != "prod-6" || strings.Join(b.Members, ",") != "prod-6,prod-7,prod-8" {
		t.Fatalf("retry bootstrap %+v, want restore retry restoring prod-6..8 (above prod-0..5)", b)
	}
	// The failed restore's volumes were the memberless cluster's: the retry keeps them until
	// verified.
	for _, name := range []string{"prod-3", "prod-4", "prod-5"} {
		if pvc, err := getPVC(t, ns, name); err != nil || metav1.GetControllerOf(pvc) != nil || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "retry" {
			t.Fatalf("volume %s after the retry: %v %+v", name, err, pvc.ObjectMeta)
		}
	}
}
