package etcdrestore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestOneRestorePerCluster: of two in-place EtcdRestores of one cluster, the later waits
// (RestoreInProgress, naming the first, one Warning event) and deletes nothing while the first
// runs, even once the first has made its cluster; when the first fails, the second goes on and
// replaces the first's memberless cluster.
func TestOneRestorePerCluster(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := cluster(ns, "prod", 1)
	create(t, old)
	create(t, s.restore(ns, "first", "prod", "etcd.backup"))
	// Created in the same second or not, "first" goes first (then by name).
	create(t, s.restore(ns, "second", "prod", "etcd.backup"))

	waitCondition(t, ns, "second", etcdv1beta2.RestoreConditionComplete, "False/"+etcdv1beta2.ReasonRestoreInProgress)
	checkPasses(t, ns, "first", restoredOK)
	first := waitRestoring(t, ns, "prod", old.UID)
	if first.Spec.Bootstrap.Restore.RestoreName != "first" {
		t.Fatalf("cluster made by %q, want first", first.Spec.Bootstrap.Restore.RestoreName)
	}
	// Passes of the second restore while the first owns the cluster: it still waits.
	for i := range 3 {
		touch(t, ns, "second", i)
	}
	rs := waitCondition(t, ns, "second", etcdv1beta2.RestoreConditionComplete, "False/"+etcdv1beta2.ReasonRestoreInProgress)
	if msg := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete).Message; !strings.Contains(msg, "EtcdRestore first") {
		t.Errorf("waiting message %q does not name the first restore", msg)
	}
	if rs.Status.StartTime != nil || rs.Status.Phase != etcdv1beta2.RestorePhasePending {
		t.Errorf("a waiting restore started: %+v", rs.Status)
	}
	if c, err := getCluster(t, ns, "prod"); err != nil || c.UID != first.UID || c.DeletionTimestamp != nil {
		t.Fatalf("the second restore touched the first's cluster: %v", err)
	}
	if n := warnings(t, ns, "second", etcdv1beta2.ReasonRestoreInProgress); n != 1 {
		t.Errorf("%d RestoreInProgress warnings, want 1", n)
	}

	// The etcd operator could not restore the first restore's members: it says how to retry,
	// and the second one is that retry.
	restoreFailedIn(t, first, etcdv1beta2.ReasonInsufficientStorage, "member prod-0 could not restore the backup: the data volume has 10 MiB free")
	failed := waitCondition(t, ns, "first", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonInsufficientStorage)
	if !strings.Contains(failed.Status.Reason, "create a new EtcdRestore with etcdCluster.name prod") {
		t.Errorf("failure %q does not say how to retry", failed.Status.Reason)
	}
	checkPasses(t, ns, "second", restoredOK)
	retry := waitRestoring(t, ns, "prod", first.UID)
	if b := retry.Spec.Bootstrap.Restore; b.RestoreName != "second" {
		t.Fatalf("cluster after the retry made by %q", b.RestoreName)
	}
}

// touch changes an annotation of the EtcdRestore, which makes the controller look at it again.
func touch(t *testing.T, ns, name string, i int) {
	t.Helper()
	rs := getRestore(t, ns, name)
	patch := client.MergeFrom(rs.DeepCopy())
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations["test/touch"] = fmt.Sprint(i)
	if err := k8s.Patch(t.Context(), rs, patch); err != nil {
		t.Fatal(err)
	}
}

// warnings counts the Warning events with reason about EtcdRestore name (aggregated repeats
// count as many).
func warnings(t *testing.T, ns, name, reason string) int32 {
	t.Helper()
	var n int32
	testutil.Eventually(t, testutil.Timeout, "events of "+name, func() (bool, string) {
		n = 0
		list := &corev1.EventList{}
		if err := k8s.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "EtcdRestore" && e.Type == corev1.EventTypeWarning && e.Reason == reason {
				n += max(e.Count, 1)
			}
		}
		return n > 0, "none yet"
	})
	return n
}

// TestLockOrder: the restore that made the standing cluster goes first, then the oldest, then
// by name; never both ways round.
func TestLockOrder(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	old, young, twin := restoreAt("b-old", t0), restoreAt("a-young", t0.Add(time.Minute)), restoreAt("c-twin", t0)
	for _, tc := range []struct {
		name string
		a, b *etcdv1beta2.EtcdRestore
		c    *etcdv1beta2.EtcdCluster
		want bool
	}{
		{"older first", old, young, nil, true},
		{"younger second", young, old, nil, false},
		{"same second: by name", old, twin, nil, true},
		{"the cluster's maker first though younger", young, old, madeBy(young), true},
		{"not before the cluster's maker", old, young, madeBy(young), false},
		{"a cluster nobody here made: age", old, young, madeBy(restoreAt("gone", t0)), true},
	} {
		if got := precedes(tc.a, tc.b, tc.c); got != tc.want {
			t.Errorf("%s: precedes(%s, %s) = %v", tc.name, tc.a.Name, tc.b.Name, got)
		}
		if tc.want && precedes(tc.b, tc.a, tc.c) {
			t.Errorf("%s: both go first", tc.name)
		}
	}
}

// TestInPlaceRestoreOfADeclarativeCluster: a cluster applied with bootstrap.restore.source by a
// person (no EtcdRestore made it) is restored in place like any other; it used to stop the
// restore in a loop of "getting EtcdRestore  that made EtcdCluster" errors.
func TestInPlaceRestoreOfADeclarativeCluster(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := cluster(ns, "app", 1)
	old.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
		StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: s.bucket.Source("etcd.backup", "aws")}}}
	create(t, old)
	create(t, s.restore(ns, "again", "app", "etcd.backup"))
	checkPasses(t, ns, "again", restoredOK)
	c := waitRestoring(t, ns, "app", old.UID)
	if b := c.Spec.Bootstrap.Restore; b.RestoreName != "again" || b.Source.SHA256 != s.backup.SHA256 {
		t.Fatalf("replacing cluster's bootstrap %+v", b)
	}
}
