//go:build e2e

package restore

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestDeclarativeRecovery is disaster recovery by applying manifests (issue 28, item 3): a
// 3-member cluster with volumes is backed up twice under a prefix (more keys the second time),
// then its namespace is deleted with everything in it (the cluster, its volumes, the
// EtcdBackups). The namespace is created again and only two manifests are applied, as a Git
// repository would hold them: the credentials Secret and an EtcdCluster whose
// bootstrap.restore.source names the bucket prefix with backupSelection Newest, no object key,
// no checksum. No EtcdRestore exists: the etcd operator chooses the newest backup of the
// cluster, reads it whole, records it (status.restore.selected), builds every member from it,
// verifies them (Restored), and the cluster serves every key of the second backup, at a
// revision raised above it.
func TestDeclarativeRecovery(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "gitops")
	ctx := t.Context()
	const n = 5_000
	pre := "/gitops/"

	app := func() *etcdv1beta2.EtcdCluster { return clusterOnVolumes(ns, "app", "64Mi") }
	f.Create(t, app())
	f.WaitClusterAvailable(t, ns, "app", 3, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "app"))
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	backUp := func(name string) *etcdv1beta2.EtcdBackup {
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: etcdv1beta2.BackupSpec{
				EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: "app"},
				StorageType:  etcdv1beta2.BackupStorageTypeS3,
				BackupSource: bucket.Source("app/", "aws"),
				PathType:     etcdv1beta2.BackupPathPrefix,
			},
		})
		b := f.WaitBackupCompleted(t, ns, name, 3*time.Minute)
		t.Logf("backup %s: %d bytes at revision %d, sha256 %s", b.Status.Location, b.Status.Size, b.Status.EtcdRevision, b.Status.SHA256)
		return b
	}
	framework.PutDataset(t, cli, pre, 0, n/2)
	backUp("app-backup-1")
	framework.PutDataset(t, cli, pre, n/2, n)
	want := framework.KeyspaceSHA256(t, cli, pre)
	cli.Close()
	backup := backUp("app-backup-2")

	// The disaster: the namespace and everything in it is gone.
	nsObj := &corev1.Namespace{}
	if err := f.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.Delete(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 3*time.Minute, "namespace "+ns+" gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	// Recovery from manifests alone.
	start := time.Now()
	f.Create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: nsObj.Labels}})
	bucket.CreateSecret(t, f, ns, "aws")
	c := app()
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
		StorageType:     etcdv1beta2.BackupStorageTypeS3,
		BackupSource:    bucket.Source("app/", "aws"),
		BackupSelection: etcdv1beta2.BackupSelectionNewest,
	}}}
	f.Create(t, c)
	got := f.WaitClusterAvailable(t, ns, "app", 3, 5*time.Minute)
	t.Logf("recovered from manifests in %s", time.Since(start).Round(100*time.Millisecond))
	cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("Available without Restored=True: %+v", cond)
	}
	st := got.Status.Restore
	if st == nil || st.MembersVerified != 3 || st.BackupRevision != backup.Status.EtcdRevision || st.SHA256 != backup.Status.SHA256 || st.Revision <= etcdv1beta2.DefaultRevisionBump {
		t.Fatalf("status.restore = %+v; want 3 members verified at the backup's revision %d raised by %d, sha256 %s", st, backup.Status.EtcdRevision, int64(etcdv1beta2.DefaultRevisionBump), backup.Status.SHA256)
	}
	if sel := st.Selected; sel == nil || sel.Location != backup.Status.Location || sel.SHA256 != backup.Status.SHA256 || sel.Size != backup.Status.Size {
		t.Fatalf("status.restore.selected = %+v, want the newest backup %s (sha256 %s)", sel, backup.Status.Location, backup.Status.SHA256)
	}
	t.Logf("Restored: %s", cond.Message)

	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != got.UID || len(p.OwnerReferences) != 1 {
			t.Fatalf("pod %s owners %v: every member belongs to the cluster alone", p.Name, p.OwnerReferences)
		}
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want the 3 restored members", len(pods.Items))
	}
	restoreList := &etcdv1beta2.EtcdRestoreList{}
	if err := f.Client.List(ctx, restoreList, client.InNamespace(ns)); err != nil || len(restoreList.Items) != 0 {
		t.Fatalf("EtcdRestores %v (%v): the recovery needs none", restoreList.Items, err)
	}

	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "app"))
	if got := framework.KeyspaceSHA256(t, cli, pre); got != want {
		t.Fatal("the recovered keyspace differs from the one backed up")
	}
	if seen, diffs := framework.CheckDataset(t, cli, pre, n); seen != n || len(diffs) != 0 {
		t.Fatalf("%d keys of %d, differences %v", seen, n, diffs)
	}
	resp, err := cli.Put(ctx, pre+"after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision <= etcdv1beta2.DefaultRevisionBump {
		t.Fatalf("a write after the recovery got revision %d: not raised above the backup's", resp.Header.Revision)
	}
}
