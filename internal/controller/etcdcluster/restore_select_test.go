package etcdcluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture/capturetest"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// prefixStore is a MinIO bucket, a backend to write backups into it, and the credentials
// Secret "aws" in ns.
func prefixStore(t *testing.T, ns string) (*storagetest.Bucket, backend.Backend) {
	t.Helper()
	bk := storagetest.NewS3Bucket(t)
	b := bk.S3Backend(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bk.Secret}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return bk, b
}

// putBackup writes a backup of id at rev, taken at t, as the backup operator names it: n bytes
// and etcd's trailing sha256 (corrupt: one byte flipped). It returns the key and the object's
// sha256.
func putBackup(t *testing.T, b backend.Backend, prefix string, id snapshot.Identity, rev int64, at time.Time, n int, corrupt bool) (key, sum string) {
	t.Helper()
	data := bytes.Repeat([]byte(strconv.FormatInt(rev, 10)), n)[:n] // any filler: the trailer makes it a snapshot
	trailer := sha256.Sum256(data)
	data = append(data, trailer[:]...)
	if corrupt {
		data[n/2] ^= 0x01
	}
	key = snapshot.ClusterKey(prefix, id, rev, at)
	if err := b.Put(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return key, hex.EncodeToString(s[:])
}

// newestCluster is a cluster of size members restored from the newest backup of its own
// identity under prefix.
func newestCluster(ns string, bk *storagetest.Bucket, prefix string, size int32) *etcdv1beta2.EtcdCluster {
	c := newCluster(ns, "c", size)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
		StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: bk.Source(prefix, "aws"), BackupSelection: etcdv1beta2.BackupSelectionNewest,
	}}}
	return c
}

// TestNewestSourceRestoresTheNewestVerifiedBackup: a cluster applied with a prefix and
// backupSelection Newest (what a manifest kept in Git names) is restored from the newest backup
// of its own namespace and name that reads whole and verifies: another cluster's newer backup
// under the same prefix is never chosen, a newer backup of its own that is corrupt is skipped
// and named. The choice is recorded before any member exists, and every member restores
// exactly that object (its sha256 and size pinned).
func TestNewestSourceRestoresTheNewestVerifiedBackup(t *testing.T) {
	ns := namespace(t, "nokubelet-newest")
	bk, b := prefixStore(t, ns)
	t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	own := snapshot.Identity{Namespace: ns, Cluster: "c", ClusterID: 0xa1}
	_, _ = putBackup(t, b, "etcd/backups", own, 100, t0, 3000, false)
	wantKey, wantSum := putBackup(t, b, "etcd/backups", own, 200, t0.Add(time.Hour), 4000, false)
	corruptKey, _ := putBackup(t, b, "etcd/backups", own, 300, t0.Add(2*time.Hour), 5000, true)
	_, _ = putBackup(t, b, "etcd/backups", snapshot.Identity{Namespace: "other-team", Cluster: "c", ClusterID: 0xb2}, 400, t0.Add(150*time.Minute), 6000, false)

	c := newestCluster(ns, bk, "etcd/backups", 3)
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	var sel *etcdv1beta2.SelectedBackup
	testutil.Eventually(t, testutil.Timeout, "the backup chosen", testutil.NoError(func() error {
		st := getCluster(t, ns, "c").Status.Restore
		if st == nil || st.Selected == nil {
			return fmt.Errorf("status.restore %+v", st)
		}
		sel = st.Selected
		return nil
	}))
	if want := "S3://" + bk.Name + "/" + wantKey; sel.Location != want || sel.SHA256 != wantSum || sel.Size != 4032 || sel.Revision != 200 {
		t.Fatalf("chose %+v, want %s (sha256 %s, 4032 bytes, revision 200)", sel, want, wantSum)
	}
	if len(sel.Skipped) != 1 || !strings.Contains(sel.Skipped[0], corruptKey) {
		t.Fatalf("skipped %v, want the corrupt newer backup %s", sel.Skipped, corruptKey)
	}
	restoreArgsContain(t, ns, []string{"c-0", "c-1", "c-2"}, "--sha256="+wantSum, "--size=4032", wantKey)
	// A newer backup arriving later changes nothing: the choice is made once.
	putBackup(t, b, "etcd/backups", own, 500, time.Now().UTC(), 2000, false)
	testutil.Consistently(t, 3*time.Second, "the choice stays", testutil.NoError(func() error {
		if got := getCluster(t, ns, "c").Status.Restore.Selected; got == nil || got.Location != sel.Location {
			return fmt.Errorf("selected %+v, want %s", got, sel.Location)
		}
		return nil
	}))
}

// TestNewestSourceWaitsForABackup: a cluster applied before any backup of it is under the
// prefix (the bucket still being copied in) creates nothing and says why (Restored=False
// NoSuccessfulBackup, naming the other clusters whose backups are there); once a backup of it
// lands, the next attempt (SelectRetry, 2 s in this suite) restores it.
func TestNewestSourceWaitsForABackup(t *testing.T) {
	ns := namespace(t, "nokubelet-newest")
	bk, b := prefixStore(t, ns)
	putBackup(t, b, "etcd/backups", snapshot.Identity{Namespace: "other-team", Cluster: "c", ClusterID: 0xb2}, 400, time.Now().UTC(), 1000, false)
	c := newestCluster(ns, bk, "etcd/backups", 1)
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "Restored=False NoSuccessfulBackup", testutil.NoError(func() error {
		cond := restoredCondition(t, ns)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonNoSuccessfulBackup || !strings.Contains(cond.Message, "other-team/c") {
			return fmt.Errorf("Restored %+v", cond)
		}
		return nil
	}))
	if got := podNames(t, ns); len(got) != 0 {
		t.Fatalf("pods %v before any backup was chosen", got)
	}
	key, sum := putBackup(t, b, "etcd/backups", snapshot.Identity{Namespace: ns, Cluster: "c", ClusterID: 0xa1}, 50, time.Now().UTC(), 1000, false)
	testutil.Eventually(t, testutil.Timeout, "the member restoring the backup that landed", testutil.NoError(func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "c-0"}, p); err != nil {
			return err
		}
		if args := strings.Join(p.Spec.InitContainers[1].Command, " "); !strings.Contains(args, key) || !strings.Contains(args, "--sha256="+sum) {
			return fmt.Errorf("restore step %q, want %s", args, key)
		}
		return nil
	}))
}

// TestPointInTimeSourceResolvesOneRevision: a cluster applied with a Newest source and a point
// in time restores the newest backup taken before that time, resolves the time to one revision
// of the capture after it before any member exists (status.restore.pointInTime, an event), and
// every member replays exactly to that revision. A point the capture does not reach creates
// nothing and says NotCaptured.
func TestPointInTimeSourceResolvesOneRevision(t *testing.T) {
	ns := namespace(t, "nokubelet-pitr")
	bk, b := prefixStore(t, ns)
	t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	own := snapshot.Identity{Namespace: ns, Cluster: "c", ClusterID: 0xa1}
	key, sum := putBackup(t, b, "etcd/backups", own, 200, t0, 4000, false)
	putBackup(t, b, "etcd/backups", own, 300, t0.Add(2*time.Hour), 4000, false) // after the point
	capturetest.Put(t, b, "etcd/backups", own, 200, 240, t0)

	c := newestCluster(ns, bk, "etcd/backups", 3)
	c.Spec.Bootstrap.Restore.Source.PointInTime = &etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t0.Add(10*time.Minute + 30*time.Second)}}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	var st *etcdv1beta2.ClusterRestoreStatus
	testutil.Eventually(t, testutil.Timeout, "the point resolved", testutil.NoError(func() error {
		st = getCluster(t, ns, "c").Status.Restore
		if st == nil || st.PointInTime == nil {
			return fmt.Errorf("status.restore %+v", st)
		}
		return nil
	}))
	if st.Selected == nil || st.Selected.Revision != 200 {
		t.Fatalf("chose %+v, want the backup at revision 200 (the one at 300 is after the point)", st.Selected)
	}
	if pt := st.PointInTime; pt.Revision != 210 || pt.Revisions != 10 || !pt.Exact || pt.Time == nil || !pt.Time.Equal(&metav1.Time{Time: t0.Add(10 * time.Minute)}) {
		t.Fatalf("resolved %+v, want revision 210 (10 revisions, received %s), exact", pt, t0.Add(10*time.Minute))
	}
	names := []string{"c-0", "c-1", "c-2"}
	restoreArgsContain(t, ns, names, "--sha256="+sum, key, "--point-in-time --to-revision=210")

	d := newCluster(ns, "d", 1)
	d.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
		StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: bk.Source(key, "aws"), Revision: 200,
		PointInTime: &etcdv1beta2.PointInTime{Revision: 250},
	}}}
	if err := k8s.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "NotCaptured", testutil.NoError(func() error {
		cond := meta.FindStatusCondition(getCluster(t, ns, "d").Status.Conditions, etcdv1beta2.ClusterConditionRestored)
		if cond == nil || cond.Reason != etcdv1beta2.ReasonNotCaptured || !strings.Contains(cond.Message, "ends at revision 240") {
			return fmt.Errorf("Restored %+v", cond)
		}
		return nil
	}))
	if got := podNames(t, ns); !slices.Equal(got, names) {
		t.Fatalf("pods %v: the cluster whose point is not captured made some", got)
	}
}

// restoreArgsContain waits until the pods of the cluster in ns are exactly names and fails
// unless each one's restore step has every string of want in its command line.
func restoreArgsContain(t *testing.T, ns string, names []string, want ...string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "restore member pods", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Equal(got, names) {
			return fmt.Errorf("pods %v, want %v", got, names)
		}
		return nil
	}))
	for _, name := range names {
		p := &corev1.Pod{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		args := strings.Join(p.Spec.InitContainers[1].Command, " ")
		for _, w := range want {
			if !strings.Contains(args, w) {
				t.Fatalf("pod %s restore step %q lacks %q", name, args, w)
			}
		}
	}
}
