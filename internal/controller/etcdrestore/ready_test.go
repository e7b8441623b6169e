package etcdrestore

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// waitKstatus waits until the restore's Ready, Reconciling and Stalled read want (as
// "Ready=False/Reason Reconciling=<none> ...") with status.observedGeneration and every one of
// them present of the restore's generation: what kstatus-based tools trust.
func waitKstatus(t *testing.T, ns, name, want string) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var rs *etcdv1beta2.EtcdRestore
	testutil.Eventually(t, testutil.Timeout, name+" "+want, func() (bool, string) {
		rs = getRestore(t, ns, name)
		if rs.Status.ObservedGeneration != rs.Generation {
			return false, fmt.Sprintf("status.observedGeneration %d, generation %d", rs.Status.ObservedGeneration, rs.Generation)
		}
		got := ""
		for _, typ := range []string{etcdv1beta2.ConditionReady, etcdv1beta2.ConditionReconciling, etcdv1beta2.ConditionStalled} {
			s := "<none>"
			if c := meta.FindStatusCondition(rs.Status.Conditions, typ); c != nil {
				if c.ObservedGeneration != rs.Generation {
					return false, fmt.Sprintf("%s of generation %d", typ, c.ObservedGeneration)
				}
				s = string(c.Status) + "/" + c.Reason
			}
			got += fmt.Sprintf(" %s=%s", typ, s)
		}
		return got[1:] == want, got[1:]
	})
	return rs
}

// TestReadyCondition: a restore is Reconciling while it runs, Ready once it succeeded, and
// Stalled with the failure's reason once it failed.
func TestReadyCondition(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))

	create(t, s.drill(ns, "missing", "scratch-missing", "missing.backup"))
	waitKstatus(t, ns, "missing", "Ready=False/BackupNotFound Reconciling=<none> Stalled=True/BackupNotFound")

	create(t, s.drill(ns, "ok", "scratch", "etcd.backup"))
	waitKstatus(t, ns, "ok", "Ready=False/Restoring Reconciling=True/Restoring Stalled=<none>")
	c := waitRestoring(t, ns, "scratch", "")
	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: 201, Hash: 12345, Keys: 200})
	waitCondition(t, ns, "ok", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	c, err := getCluster(t, ns, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	grown(t, c, "scratch-0")
	rs := waitKstatus(t, ns, "ok", "Ready=True/RestoreSucceeded Reconciling=<none> Stalled=<none>")
	if !rs.Status.Succeeded {
		t.Fatalf("Ready without succeeded: %+v", rs.Status)
	}
}
