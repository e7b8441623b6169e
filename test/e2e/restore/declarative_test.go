//go:build e2e

package restore

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestDeclarativeRecovery is disaster recovery by applying manifests (issue 28, item 3): a
// 3-member cluster with volumes is backed up, then its namespace is deleted with everything in
// it (the cluster, its volumes, the EtcdBackup). The namespace is created again and only two
// manifests are applied: the credentials Secret and an EtcdCluster whose
// bootstrap.restore.source names the backup object (pinned by the sha256 the backup recorded).
// No EtcdRestore exists: the etcd operator builds every member from the backup, verifies them
// (Restored), and the cluster serves every key of the backup, at a revision raised above it.
func TestDeclarativeRecovery(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "gitops")
	ctx := t.Context()
	const n = 5_000
	pre := "/gitops/"

	app := func() *etcdv1beta2.EtcdCluster {
		c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
		c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		}}
		return c
	}
	f.Create(t, app())
	f.WaitClusterAvailable(t, ns, "app", 3, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "app"))
	framework.PutDataset(t, cli, pre, 0, n)
	want := framework.KeyspaceSHA256(t, cli, pre)
	cli.Close()

	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-backup"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: "app"},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("app/snapshot.db", "aws"),
		},
	})
	backup := f.WaitBackupCompleted(t, ns, "app-backup", 3*time.Minute)
	_, _, key, ok := storage.ParseURL(backup.Status.Location)
	if !ok {
		t.Fatalf("backup location %q", backup.Status.Location)
	}
	t.Logf("backup %s: %d bytes at revision %d, sha256 %s", backup.Status.Location, backup.Status.Size, backup.Status.EtcdRevision, backup.Status.SHA256)

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
		StorageType:  etcdv1beta2.BackupStorageTypeS3,
		BackupSource: bucket.Source(key, "aws"),
		SHA256:       backup.Status.SHA256,
		Size:         backup.Status.Size,
		Revision:     backup.Status.EtcdRevision,
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
