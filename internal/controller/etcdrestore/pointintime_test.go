package etcdrestore

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture/capturetest"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// TestPointInTimeResolvedBeforeTouching: an in-place EtcdRestore with a point in time resolves
// it while the backup is verified, before anything happens to the cluster: a point the capture
// holds is recorded (status.pointInTime, the BackupVerified message) and the restore check
// replays to it; a point past the capture, a backup taken after the point and a backup whose
// key has no cluster identity each fail NotCaptured with the cluster untouched.
func TestPointInTimeResolvedBeforeTouching(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	rc, err := s.b.Get(t.Context(), "etcd.backup")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	rev := s.backup.Member.Revision
	id := snapshot.Identity{Namespace: ns, Cluster: "prod", ClusterID: 0xa1}
	key := snapshot.ClusterKey("pit/etcd.backup", id, rev, t0)
	if err := s.b.Put(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	capturetest.Put(t, s.b, "pit/etcd.backup", id, rev, rev+20, t0)
	c := cluster(ns, "prod", 3)
	create(t, c)

	at := func(name, key string, pt etcdv1beta2.PointInTime) {
		rs := s.restore(ns, name, "prod", key)
		rs.Spec.PointInTime = &pt
		create(t, rs)
	}
	at("past", key, etcdv1beta2.PointInTime{Revision: rev + 50})
	at("before", key, etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t0.Add(-time.Minute)}})
	at("legacy", "etcd.backup", etcdv1beta2.PointInTime{})
	for name, msg := range map[string]string{"past": "ends at revision", "before": "not before the point in time", "legacy": "no cluster identity"} {
		rs := waitCondition(t, ns, name, etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonNotCaptured)
		if !strings.Contains(rs.Status.Reason, msg) || !strings.Contains(rs.Status.Reason, "no cluster was changed") {
			t.Errorf("%s: %q, want NotCaptured saying %q and that no cluster was changed", name, rs.Status.Reason, msg)
		}
	}
	if got, err := getCluster(t, ns, "prod"); err != nil || got.UID != c.UID || got.DeletionTimestamp != nil {
		t.Fatalf("cluster touched: %v %+v", err, got.ObjectMeta)
	}

	at("mid", key, etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t0.Add(12*time.Minute + 30*time.Second)}})
	rs := waitCondition(t, ns, "mid", etcdv1beta2.RestoreConditionBackupVerified, "True/"+reasonBackupVerified)
	if pt := rs.Status.PointInTime; pt == nil || pt.Revision != rev+12 || pt.Revisions != 12 || !pt.Exact {
		t.Fatalf("status.pointInTime %+v, want revision %d (12 replayed), exact", pt, rev+12)
	}
	if src := rs.Status.Source; src == nil || src.PointInTime == nil || src.PointInTime.Revision != rev+12 {
		t.Fatalf("status.source %+v: the cluster must replay to revision %d", src, rev+12)
	}
	_, pod := playJob(t, ns, "mid")
	args := strings.Join(pod.Spec.Containers[0].Command, " ")
	if want := fmt.Sprintf("--point-in-time --to-revision=%d", rev+12); !strings.Contains(args, want) {
		t.Fatalf("the restore check %q does not replay (%q)", args, want)
	}
}
