package etcdrestore

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// drill is a restore of key into a new cluster copying template "tmpl".
func (s *store) drill(ns, name, cluster, key string) *etcdv1beta2.EtcdRestore {
	rs := s.restore(ns, name, cluster, key)
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	return rs
}

// TestEmptyBackupRestores: a backup of a cluster with no keys verifies and restores: the etcd
// operator verifies the members at the revision the seed serves (its snapshot holds no key
// revision), and the restore checks every member at it.
func TestEmptyBackupRestores(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	e := snapshottest.StartEtcd(t, "")
	if _, err := snapshot.Take(t.Context(), &snapshot.Config{
		Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
		Key: func(int64, time.Time) string { return "empty.backup" },
	}, s.b); err != nil {
		t.Fatal(err)
	}
	create(t, cluster(ns, "tmpl", 3))
	create(t, s.drill(ns, "empty", "emptyc", "empty.backup"))
	c := waitRestoring(t, ns, "emptyc", "")
	const hash = 1084519789
	names := []string{"emptyc-0", "emptyc-1", "emptyc-2"}
	// The etcd operator verified its members at the revision the seed serves.
	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: 1, Hash: hash, Keys: 0})
	rs := waitCondition(t, ns, "empty", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	if v := rs.Status.Verification; v == nil || v.Revision != 1 || v.Keys != 0 || v.Hash != hash {
		t.Fatalf("verification after seeding: %+v", v)
	}
	c, _ = getCluster(t, ns, "emptyc")
	grown(t, c, names...)
	rs = waitCondition(t, ns, "empty", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	if v := rs.Status.Verification; !v.Passed || v.MembersVerified != 3 || v.Keys != 0 {
		t.Fatalf("verification %+v", v)
	}
	if rs.Status.RestoredRevision != 1 {
		t.Errorf("restored revision %d, want 1", rs.Status.RestoredRevision)
	}
}

// TestTimedOutRestoreLeavesAFormedCluster is the second reproduction of issue 28: the restore
// could not record Seeded before its deadline, while the etcd operator formed the cluster from
// the restored members (not verified yet) and clients may write to it. The restore fails
// Timeout, says so, and leaves the cluster and its members alone (it deletes no pod at all).
func TestTimedOutRestoreLeavesAFormedCluster(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	create(t, s.drill(ns, "late", "latec", "etcd.backup"))
	c := waitRestoring(t, ns, "latec", "")
	pod := memberPod(t, c, "latec-0") // the etcd operator's
	c.Status.ClusterID = "c1"
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionRestored, Status: metav1.ConditionFalse, Reason: etcdv1beta2.ReasonRestoring, Message: "checking member latec-0"})
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	waitProgress(t, ns, "late", "checking member latec-0")

	pastDeadline(t, ns, "late")
	rs := waitCondition(t, ns, "late", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonTimeout)
	if !strings.Contains(rs.Status.Reason, "formed on the restored data and may serve writes") {
		t.Errorf("failure %q does not say the cluster formed and was left running", rs.Status.Reason)
	}
	if p, err := getPod(t, ns, "latec-0"); gone(err, p) || p.UID != pod.UID {
		t.Fatalf("the member of the formed cluster was stopped: %v", err)
	}
	if got, err := getCluster(t, ns, "latec"); err != nil || got.UID != c.UID || got.DeletionTimestamp != nil {
		t.Fatalf("the formed cluster was touched: %v", err)
	}
}

// TestDrillScratchClusterNeverRecovers: a drill's template has spec.recovery; its scratch
// cluster does not, so an automatic restore can never replace it with a cluster the drill did
// not make (which its TTL would then leave behind). A restore into a new name that is not a
// drill (no TTL) keeps the template's recovery: it is the user's cluster.
func TestDrillScratchClusterNeverRecovers(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	tmpl := cluster(ns, "tmpl", 1)
	tmpl.Spec.Recovery = &etcdv1beta2.RecoverySpec{BackupScheduleName: "nightly"}
	create(t, tmpl)
	drill := s.drill(ns, "drill", "scratch", "etcd.backup")
	drill.Spec.TTLSecondsAfterFinished = ptr.To(int32(600))
	create(t, drill)
	create(t, s.drill(ns, "copy", "copyc", "etcd.backup"))
	waitRestoring(t, ns, "scratch", "")
	waitRestoring(t, ns, "copyc", "")
	if c, err := getCluster(t, ns, "scratch"); err != nil || c.Spec.Recovery != nil {
		t.Fatalf("drill's scratch cluster: %v, recovery %+v", err, c.Spec.Recovery)
	}
	if c, err := getCluster(t, ns, "copyc"); err != nil || c.Spec.Recovery == nil || c.Spec.Recovery.BackupScheduleName != "nightly" {
		t.Fatalf("restore into a new name without a TTL: %v, recovery %+v", err, c.Spec.Recovery)
	}
}
