package etcdrestore

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestInPlaceRestoreOwnership: the restore creates no member pod or volume (the etcd operator
// builds them from the cluster's bootstrap.restore.source), the restored members' names are
// above every pod or volume of the cluster's name, the old cluster is marked replaced (its
// operator stops its members at once) and its volumes are retained, with no owner, before it
// is deleted, kept while the restore runs, and deleted once the restored cluster is verified.
// envtest runs no garbage collector: the test reads owner references.
func TestInPlaceRestoreOwnership(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	for i := range 3 {
		pod := member.NewPod(old, fmt.Sprintf("prod-%d", i), old.Spec.Version, "new", "")
		pod.OwnerReferences = []metav1.OwnerReference{controllerRef(old)}
		pod.Spec.NodeName = "node-a" // scheduled: its deletion shows its grace period (no kubelet here)
		create(t, pod)
	}
	// A stranger's pod with the cluster's labels: never touched, and the seed goes above it.
	stray := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-7", Labels: map[string]string{member.LabelApp: member.AppEtcd, member.LabelCluster: "prod"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
	}
	create(t, stray)
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	checkPasses(t, ns, "prod", restoredOK)

	// When the old cluster is deleted, its volumes already belong to the EtcdRestore.
	var rs *etcdv1beta2.EtcdRestore
	testutil.Eventually(t, testutil.Timeout, "old cluster deleted", func() (bool, string) {
		c, err := getCluster(t, ns, "prod")
		return err == nil && c.DeletionTimestamp != nil, fmt.Sprint(err)
	})
	rs = getRestore(t, ns, "prod")
	// Its operator stopped the old members at once (a short grace period, not their own 30 s)
	// before the deletion; the stranger's pod is untouched.
	if c, err := getCluster(t, ns, "prod"); err != nil || c.Annotations[etcdv1beta2.AnnotationReplacedBy] != string(rs.UID) {
		t.Fatalf("the old cluster is not marked replaced by the restore: %v", err)
	}
	for i := range 3 {
		if p, err := getPod(t, ns, fmt.Sprintf("prod-%d", i)); err != nil || !restoreboot.Stopping(p) {
			t.Fatalf("old member pod prod-%d not stopped with the short grace period: %v", i, err)
		}
	}
	if got, err := getPod(t, ns, stray.Name); gone(err, got) {
		t.Fatalf("the stranger's pod %s was deleted: %v", stray.Name, err)
	}
	for i := range 3 {
		pvc, err := getPVC(t, ns, fmt.Sprintf("prod-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(pvc.OwnerReferences) > 0 || !retainedBy(pvc, rs) || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "prod" || pvc.Labels[member.LabelCluster] != "prod" {
			t.Fatalf("volume %s not retained before the old cluster was deleted: owners %+v annotations %v labels %v", pvc.Name, pvc.OwnerReferences, pvc.Annotations, pvc.Labels)
		}
	}
	c := waitRestoring(t, ns, "prod", old.UID)
	if got := c.Spec.Bootstrap.Restore.SeedMember; got != "prod-8" {
		t.Fatalf("seed member %s, want prod-8: above prod-0..2 (retained) and prod-7 (a stranger's)", got)
	}
	if c.Annotations[etcdv1beta2.AnnotationRestoreUID] != string(rs.UID) {
		t.Errorf("restored cluster annotations %v lack the restore's UID", c.Annotations)
	}

	if p, err := getPod(t, ns, "prod-8"); !gone(err, p) {
		t.Fatalf("the restore created member pod prod-8 (%v): that is the etcd operator's", err)
	}
	if src := c.Spec.Bootstrap.Restore.Source; src == nil || src.SHA256 != s.backup.SHA256 || src.Size != s.backup.Size || src.S3 == nil || src.S3.Path != s.bucket.Name+"/etcd.backup" {
		t.Fatalf("bootstrap.restore.source %+v, want the verified backup", src)
	}
	rs = getRestore(t, ns, "prod")
	if want := []string{"prod-0", "prod-1", "prod-2"}; !slices.Equal(rs.Status.RetainedVolumes, want) {
		t.Errorf("status.retainedVolumes %v, want %v", rs.Status.RetainedVolumes, want)
	}

	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: 201, Hash: 777, Keys: 200})
	waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	// Not verified yet: the old volumes stay.
	for i := range 3 {
		if pvc, err := getPVC(t, ns, fmt.Sprintf("prod-%d", i)); gone(err, pvc) {
			t.Fatalf("retained volume prod-%d deleted before the restored cluster was verified", i)
		}
	}
	c, _ = getCluster(t, ns, "prod")
	grown(t, c, "prod-8", "prod-9", "prod-10")
	waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	testutil.Eventually(t, testutil.Timeout, "retained volumes deleted after verification", func() (bool, string) {
		for i := range 3 {
			if pvc, err := getPVC(t, ns, fmt.Sprintf("prod-%d", i)); !gone(err, pvc) {
				return false, pvc.Name + " still there"
			}
		}
		return len(getRestore(t, ns, "prod").Status.RetainedVolumes) == 0, "status still lists them"
	})
	if p, err := getPod(t, ns, "prod-7"); gone(err, p) {
		t.Fatalf("the stranger's pod was deleted: %v", err)
	}
}

// TestDrillCleanupDeletesNothingItDidNotMake is the first reproduction of issue 13: a drill
// aimed by mistake at an existing cluster fails with ClusterExists, and its TTL cleanup then
// must not delete that cluster's member pod (it used to delete <name>-0 by name).
func TestDrillCleanupDeletesNothingItDidNotMake(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	victim := cluster(ns, "victim", 1)
	create(t, victim)
	memberPod(t, victim, "victim-0")
	rs := s.restore(ns, "drill", "victim", "etcd.backup")
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	rs.Spec.TTLSecondsAfterFinished = new(int32)
	create(t, rs)
	waitCondition(t, ns, "drill", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonClusterExists)
	testutil.Eventually(t, testutil.Timeout, "TTL ran", func() (bool, string) {
		return getRestore(t, ns, "drill").Status.ClusterDeletedTime != nil, "clusterDeletedTime unset"
	})
	if p, err := getPod(t, ns, "victim-0"); gone(err, p) {
		t.Fatalf("the drill's cleanup deleted victim-0, a member of a cluster it did not make: %v", err)
	}
	if c, err := getCluster(t, ns, "victim"); err != nil || c.UID != victim.UID || c.DeletionTimestamp != nil {
		t.Fatalf("victim touched: %v", err)
	}
}
