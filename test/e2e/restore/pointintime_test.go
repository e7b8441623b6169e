//go:build e2e

package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPointInTimeRecovery is a point-in-time restore on real pods (issue 29, item 2): a cluster
// is backed up to MinIO, then changes after the backup (new keys, overwrites, deletions) are
// captured next to it by pkg/capture, run here against the cluster (the backup operator does
// not run a capture yet). The cluster is deleted. Two clusters are then applied from manifests
// with the backup prefix and a point in time: one at a revision in the middle of the changes,
// one at the newest captured. Each member's restore step, in the etcd image, replays the
// capture onto the backup; each cluster serves exactly the source's keys and values at its
// point, and says which revision it restored.
func TestPointInTimeRecovery(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "pitr")
	ctx := t.Context()
	const pre = "/pitr/"

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	f.WaitClusterAvailable(t, ns, "src", 1, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "src"))
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	framework.PutDataset(t, cli, pre, 0, 1000)
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src-backup"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "src"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("src/", "aws"), PathType: etcdv1beta2.BackupPathPrefix,
		},
	})
	bk := f.WaitBackupCompleted(t, ns, "src-backup", 3*time.Minute)
	key := strings.TrimPrefix(bk.Status.Location, "S3://"+bucket.Name+"/")
	prefix, info, ok := snapshot.SplitKey(key)
	if !ok || !info.Tagged() {
		t.Fatalf("backup key %q has no cluster identity", key)
	}

	// The capture after the backup, from the revision its key records (the replay skips what
	// the snapshot already holds).
	c, err := capture.New(capture.Config{Client: cli, Backend: bucket.Backend(), Prefix: prefix, Identity: info.Identity,
		StartRevision: info.Revision + 1, SegmentInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	defer stop()
	write := func(ops func(i int) clientv3.Op, n int) int64 {
		var rev int64
		for i := range n {
			resp, err := cli.Do(ctx, ops(i))
			if err != nil {
				t.Fatal(err)
			}
			if r := resp.Put(); r != nil {
				rev = r.Header.Revision
			} else if d := resp.Del(); d != nil {
				rev = d.Header.Revision
			}
		}
		return rev
	}
	write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%snew/%04d", pre, i), "a") }, 200)
	mid := write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%s%08d", pre, i), "overwritten") }, 100)
	atMid := keysAt(t, cli, pre, mid)
	write(func(i int) clientv3.Op { return clientv3.OpDelete(fmt.Sprintf("%s%08d", pre, 500+i)) }, 100)
	end := write(func(i int) clientv3.Op { return clientv3.OpPut(fmt.Sprintf("%slate/%04d", pre, i), "b") }, 100)
	atEnd := keysAt(t, cli, pre, end)
	framework.Eventually(t, time.Minute, "the capture uploads every change", func(context.Context) (bool, error) {
		return c.Progress().UploadedRevision >= end, nil
	})
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("capture: %v", err)
	}
	cli.Close()

	// The disaster, then recovery from manifests to two points.
	src := &etcdv1beta2.EtcdCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "src"}, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.Delete(ctx, src); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 3*time.Minute, "cluster src gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "src"}, &etcdv1beta2.EtcdCluster{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	restored := func(name string, at etcdv1beta2.PointInTime) {
		f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.ClusterSpec{Size: 1,
			Bootstrap: &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
				StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: bucket.Source("src/", "aws"),
				BackupSelection: etcdv1beta2.BackupSelectionNewest, Of: &etcdv1beta2.BackupIdentity{Name: "src"},
				PointInTime: &at,
			}}}}})
	}
	restored("at-mid", etcdv1beta2.PointInTime{Revision: mid})
	restored("at-end", etcdv1beta2.PointInTime{})
	for _, tc := range []struct {
		name  string
		rev   int64
		exact bool
		want  map[string]string
	}{{"at-mid", mid, true, atMid}, {"at-end", end, false, atEnd}} {
		got := f.WaitClusterAvailable(t, ns, tc.name, 1, 5*time.Minute)
		pt := got.Status.Restore.PointInTime
		if pt == nil || pt.Revision != tc.rev || pt.Exact != tc.exact || got.Status.Restore.BackupRevision != tc.rev {
			t.Fatalf("%s: status.restore %+v, point %+v; want revision %d, exact %v", tc.name, got.Status.Restore, pt, tc.rev, tc.exact)
		}
		rc := f.EtcdClient(t, framework.ClientEndpoint(ns, tc.name))
		have := keysAt(t, rc, pre, 0)
		rc.Close()
		if len(have) != len(tc.want) {
			t.Fatalf("%s serves %d keys, the source had %d at revision %d", tc.name, len(have), len(tc.want), tc.rev)
		}
		for k, v := range tc.want {
			if have[k] != v {
				t.Fatalf("%s: key %s = %q, the source had %q at revision %d", tc.name, k, have[k], v, tc.rev)
			}
		}
		t.Logf("%s: %d keys as at revision %d (%d revisions replayed onto the backup at %d)", tc.name, len(have), tc.rev, pt.Revisions, info.Revision)
	}
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
