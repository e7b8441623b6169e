//go:build e2e

package restore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPointInTimeRecovery is continuous backup and point-in-time restore on real pods (issue
// 29): an EtcdBackupSchedule with continuousCapture on a cluster; its capture asks for the full
// backup it continues (MinIO), then streams every change (new keys, overwrites, deletions, a
// paced run of writes and a bounded write load) into segments. The cluster is deleted, pods and
// volumes, while the load runs. Three clusters are then applied from manifests with the backup
// prefix: one at a revision in the middle of the changes, one at a time in the paced run, one
// without a target (the newest point captured). Each serves exactly the source's keys and values
// at its point, key by key; the one without a target holds every write acknowledged before the
// disaster but the last capture interval's (the count lost is logged).
func TestPointInTimeRecovery(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "pitr")
	ctx := t.Context()
	const pre = "/pitr/"
	const interval = 2 * time.Second

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	f.WaitClusterAvailable(t, ns, "src", 1, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "src"))
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	framework.PutDataset(t, cli, pre, 0, 1000)
	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "0 0 1 1 *", // the capture's own backup request is the only backup
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "src"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
				BackupSource: bucket.Source("src/", "aws"),
			}},
			ContinuousCapture: &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To(int32(interval / time.Second))},
		},
	})
	var sched etcdv1beta2.EtcdBackupSchedule
	framework.Eventually(t, 3*time.Minute, "the schedule capturing after the backup it requested", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "src"}, &sched); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(sched.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing)
		if c == nil || c.Status != metav1.ConditionTrue || sched.Status.Capture == nil || sched.Status.Capture.StartRevision == 0 {
			return false, fmt.Errorf("condition Capturing %+v, status.capture %+v", c, sched.Status.Capture)
		}
		return true, nil
	})
	bk := f.WaitBackupCompleted(t, ns, sched.Status.Capture.LastBackupRequest, time.Minute)
	key := strings.TrimPrefix(bk.Status.Location, "S3://"+bucket.Name+"/")
	prefix, info, ok := snapshot.SplitKey(key)
	if !ok || !info.Tagged() || sched.Status.Capture.StartRevision != info.Revision+1 {
		t.Fatalf("backup key %q (identity %v), capture from %d: want the capture to continue the backup", key, ok, sched.Status.Capture.StartRevision)
	}

	write := func(ops func(i int) clientv3.Op, n int, pace time.Duration) (revs []int64, acked []time.Time) {
		for i := range n {
			resp, err := cli.Do(ctx, ops(i))
			if err != nil {
				t.Fatal(err)
			}
			var rev int64
			if p := resp.Put(); p != nil {
				rev = p.Header.Revision
			} else {
				rev = resp.Del().Header.Revision
			}
			revs, acked = append(revs, rev), append(acked, time.Now())
			if pace > 0 {
				time.Sleep(pace)
			}
		}
		return revs, acked
	}
	write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%snew/%04d", pre, i), "a") }, 200, 0)
	revs, _ := write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%s%08d", pre, i), "overwritten") }, 100, 0)
	mid := revs[len(revs)-1]
	atMid := keysAt(t, cli, pre, mid)
	write(func(i int) clientv3.Op { return clientv3.OpDelete(fmt.Sprintf("%s%08d", pre, 500+i)) }, 100, 0)
	// Paced writes, 100 ms apart, and a whole second among them (a time target has the
	// precision of Kubernetes timestamps): the newest write acknowledged before it is k.
	revs, acked := write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%spaced/%04d", pre, i), "p") }, 40, 100*time.Millisecond)
	at := acked[5].Truncate(time.Second).Add(time.Second)
	k := 0
	for k+1 < len(acked) && acked[k+1].Before(at) {
		k++
	}

	// The disaster: the cluster deleted, pods and volumes, under a write load.
	load := framework.StartWriter(cli, pre+"load/")
	time.Sleep(5 * time.Second) // let the load write before the disaster
	src := &etcdv1beta2.EtcdCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "src"}, src); err != nil {
		t.Fatal(err)
	}
	disaster := time.Now()
	if err := f.Client.Delete(ctx, src); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 3*time.Minute, "cluster src gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "src"}, &etcdv1beta2.EtcdCluster{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	loaded := load.Stop()
	cli.Close()
	// What the capture stored by the time someone looks, one interval and an upload later.
	time.Sleep(interval + 2*time.Second)
	last, err := capture.LastCaptured(ctx, bucket.Backend(), prefix, info.Identity)
	if err != nil {
		t.Fatal(err)
	}

	restored := func(name string, at etcdv1beta2.PointInTime) {
		f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.ClusterSpec{Size: 1,
			Bootstrap: &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
				StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: bucket.Source("src/", "aws"),
				BackupSelection: etcdv1beta2.BackupSelectionNewest, Of: &etcdv1beta2.BackupIdentity{Name: "src"},
				PointInTime: &at,
			}}}}})
	}
	restored("at-mid", etcdv1beta2.PointInTime{Revision: mid})
	restored("at-time", etcdv1beta2.PointInTime{Time: &metav1.Time{Time: at}})
	restored("at-end", etcdv1beta2.PointInTime{})

	// At a revision: exactly the keyspace then.
	got := f.WaitClusterAvailable(t, ns, "at-mid", 1, 5*time.Minute)
	if pt := got.Status.Restore.PointInTime; pt == nil || pt.Revision != mid || !pt.Exact {
		t.Fatalf("at-mid: status.restore %+v; want revision %d, exact", got.Status.Restore, mid)
	}
	sameKeys(t, f, ns, "at-mid", atMid, mid)

	// At a time: the revision acknowledged last before it (or the one before that, when the
	// capture received it after the time: its clock, not the client's, dates revisions), and
	// exactly the keyspace at that revision.
	got = f.WaitClusterAvailable(t, ns, "at-time", 1, 5*time.Minute)
	pt := got.Status.Restore.PointInTime
	if pt == nil || (pt.Revision != revs[k] && pt.Revision != revs[k-1]) || pt.Time == nil || pt.Time.After(at) {
		t.Fatalf("at-time: status.restore %+v for %s; want revision %d (acknowledged %s) or %d", got.Status.Restore, at.Format(time.RFC3339Nano), revs[k], acked[k].Format(time.RFC3339Nano), revs[k-1])
	}
	want := map[string]string{}
	for key, v := range atMid {
		want[key] = v
	}
	for i := range 100 {
		delete(want, fmt.Sprintf("%s%08d", pre, 500+i))
	}
	for i, r := range revs {
		if r <= pt.Revision {
			want[fmt.Sprintf("%spaced/%04d", pre, i)] = "p"
		}
	}
	sameKeys(t, f, ns, "at-time", want, pt.Revision)

	// Without a target: the newest point captured, every acknowledged write but the last
	// interval's.
	got = f.WaitClusterAvailable(t, ns, "at-end", 1, 5*time.Minute)
	if pt := got.Status.Restore.PointInTime; pt == nil || pt.Revision != last.LastRevision {
		t.Fatalf("at-end: status.restore %+v; want revision %d, the newest captured", got.Status.Restore, last.LastRevision)
	}
	rc := f.EtcdClient(t, framework.ClientEndpoint(ns, "at-end"))
	have := keysAt(t, rc, pre, 0)
	rc.Close()
	lost, late := 0, 0
	for _, w := range loaded {
		if _, ok := have[w.Key]; ok {
			continue
		}
		lost++
		if w.Acked.Before(disaster.Add(-interval - 2*time.Second)) {
			late++
		}
	}
	t.Logf("at-end: revision %d restored; %d of %d writes acknowledged under load came back, %d lost (acknowledged in the last %s before the disaster)",
		last.LastRevision, len(loaded)-lost, len(loaded), lost, interval+2*time.Second)
	if late > 0 {
		t.Fatalf("%d writes acknowledged more than one capture interval (and an upload) before the disaster are lost", late)
	}
	for i := range 40 {
		if have[fmt.Sprintf("%spaced/%04d", pre, i)] != "p" {
			t.Fatalf("at-end: paced write %d is lost", i)
		}
	}
}

// sameKeys asserts that cluster name serves exactly want under the test's prefix.
func sameKeys(t *testing.T, f *framework.Framework, ns, name string, want map[string]string, rev int64) {
	t.Helper()
	rc := f.EtcdClient(t, framework.ClientEndpoint(ns, name))
	defer rc.Close()
	have := keysAt(t, rc, "/pitr/", 0)
	if len(have) != len(want) {
		t.Fatalf("%s serves %d keys, the source had %d at revision %d", name, len(have), len(want), rev)
	}
	for k, v := range want {
		if have[k] != v {
			t.Fatalf("%s: key %s = %q, the source had %q at revision %d", name, k, have[k], v, rev)
		}
	}
	t.Logf("%s: %d keys, as the source at revision %d", name, len(have), rev)
}

// keysAt reads every key under prefix at rev (0: the newest) with its value.
func keysAt(t *testing.T, cli *clientv3.Client, prefix string, rev int64) map[string]string {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := cli.Get(t.Context(), prefix, opts...)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}
