package etcdrestore

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func restoreAt(name string, created time.Time) *etcdv1beta2.EtcdRestore {
	return &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(created)}}
}

func madeBy(rs *etcdv1beta2.EtcdRestore) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{etcdv1beta2.AnnotationRestoreUID: string(rs.UID)}},
		Spec:       etcdv1beta2.ClusterSpec{Bootstrap: &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: rs.Name, SeedMember: "c-0"}}},
	}
}

// TestOursNeedsTheUID: a cluster naming a restore is that restore's only with its UID, or, made
// by the previous release (no UID), only if it is not older than the restore.
func TestOursNeedsTheUID(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := restoreAt("r", t0)
	same := madeBy(rs)
	other := madeBy(restoreAt("r", t0)) // same name, other UID
	other.Annotations[etcdv1beta2.AnnotationRestoreUID] = "earlier-incarnation"
	legacyNew, legacyOld := madeBy(rs), madeBy(rs)
	delete(legacyNew.Annotations, etcdv1beta2.AnnotationRestoreUID)
	delete(legacyOld.Annotations, etcdv1beta2.AnnotationRestoreUID)
	legacyNew.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	legacyOld.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	for name, tc := range map[string]struct {
		c    *etcdv1beta2.EtcdCluster
		want bool
	}{
		"its UID": {same, true}, "another UID": {other, false},
		"legacy, made after": {legacyNew, true}, "legacy, made before": {legacyOld, false},
	} {
		if got := ours(tc.c, rs); got != tc.want {
			t.Errorf("%s: ours = %v", name, got)
		}
	}
}

func TestMemberIndex(t *testing.T) {
	for name, want := range map[string]int{"c-0": 0, "c-12": 12, "c-": -1, "c-1-0": -1, "cc-3": -1, "c-x": -1} {
		n, ok := memberIndex("c", name)
		if (want >= 0) != ok || (ok && n != want) {
			t.Errorf("memberIndex(c, %s) = %d, %v", name, n, ok)
		}
	}
}
