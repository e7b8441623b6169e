//go:build e2e

// Package restore runs the restore operator as deployed on the local cluster: backups of a
// 3-member EtcdCluster in MinIO restored in place after losing every member, into a scratch
// name while the original serves, and refused when the object is corrupted or missing.
package restore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	keys   = 100_000
	prefix = "/registry/e2e/"
)

// TestRestore is issue 7's acceptance on the local cluster, as one story so the 100k-key cluster
// is built once:
//  1. a 3-member PVC-backed cluster with 100k keys is backed up to MinIO;
//  2. a corrupted and a missing object each fail their EtcdRestore with the reason, and the
//     cluster they name keeps serving, untouched;
//  3. restores into new names (drills) from S3, GCS and ABS succeed while the original keeps
//     serving (the backups of the long tier's TestBackup3MemberClusterToEveryProvider, through
//     the backup operator and the seed);
//  4. every member pod and volume is deleted, and the coreos-shaped EtcdRestore brings the cluster
//     back at size 3 with every key and value, every member restored from the backup at once,
//     while the restore operator is killed mid-way.
func TestRestore(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "restore")
	ctx := t.Context()

	db := clusterOnVolumes(ns, "db", "256Mi")
	f.Create(t, db)
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	start := time.Now()
	framework.PutDataset(t, cli, prefix, 0, keys)
	want := framework.KeyspaceSHA256(t, cli, prefix)
	t.Logf("wrote %d keys in %s", keys, time.Since(start).Round(time.Millisecond))

	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-backup"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: []string{framework.ClientEndpoint(ns, "db")},
			StorageType:   etcdv1beta2.BackupStorageTypeS3,
			BackupSource:  bucket.Source("db/etcd.backup", "aws"),
		},
	})
	backup := f.WaitBackupCompleted(t, ns, "db-backup", 3*time.Minute)
	t.Logf("backup: %d bytes at revision %d in %s", backup.Status.Size, backup.Status.EtcdRevision, backup.Status.Duration.Duration)
	if want := "S3://" + bucket.Name + "/db/etcd.backup"; backup.Status.Location != want {
		t.Errorf("status.location %q, want %q", backup.Status.Location, want)
	}

	// 2. Bad backups: the named cluster is untouched.
	copyObject(t, bucket, "db/etcd.backup", "db/corrupt.backup")
	bucket.FlipByte(t, "db/corrupt.backup", backup.Status.Size/2)
	// Checksums valid, database not: only running the restore finds it (issue 35), and an
	// in-place restore runs it in a throwaway pod before it deletes anything.
	file := filepath.Join(t.TempDir(), "snap")
	bucket.Download(t, "db/etcd.backup", file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, snapshottest.Unrestorable(data), 0o600); err != nil {
		t.Fatal(err)
	}
	bucket.Upload(t, "db/unrestorable.backup", file)
	for _, tc := range []struct{ name, key, reason string }{
		{"corrupt", "db/corrupt.backup", etcdv1beta2.ReasonBackupCorrupt},
		{"missing", "db/missing.backup", etcdv1beta2.ReasonBackupNotFound},
		{"unrestorable", "db/unrestorable.backup", etcdv1beta2.ReasonBackupCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Create(t, coreosRestore(ns, tc.name, "db", bucket.Source(tc.key, "aws")))
			rs := f.WaitRestoreFinished(t, ns, tc.name, 2*time.Minute)
			if c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed); c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason {
				t.Fatalf("Failed condition %+v, want True/%s", c, tc.reason)
			}
			t.Logf("refused: %s", rs.Status.Reason)
			if tc.name == "unrestorable" {
				if c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupRestorable); c == nil || c.Status != metav1.ConditionFalse {
					t.Fatalf("BackupRestorable %+v, want False: the checksums passed, the restore did not", c)
				}
			}
			c, err := f.GetCluster(ctx, ns, "db")
			if err != nil || c.UID != db.UID || c.DeletionTimestamp != nil || c.Spec.Bootstrap != nil {
				t.Fatalf("cluster db touched by a failed restore: %v", err)
			}
			if got := framework.KeyspaceSHA256(t, cli, prefix); got != want {
				t.Fatal("cluster db's keyspace changed")
			}
		})
	}

	// 3. Drills into scratch names while the original serves and takes writes, one per
	// provider: S3 through backupRef, GCS and ABS through the coreos storage block, so the seed
	// fetches with each provider's credentials Secret.
	drills := map[string]etcdv1beta2.RestoreSpec{
		"drill-s3": {BackupRef: &etcdv1beta2.LocalObjectReference{Name: "db-backup"}},
	}
	for _, typ := range []etcdv1beta2.BackupStorageType{etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeABS} {
		b := stores.NewBucket(t, typ)
		secret := "creds-" + strings.ToLower(string(typ))
		b.CreateSecret(t, f, ns, secret)
		name := "db-backup-" + strings.ToLower(string(typ))
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: etcdv1beta2.BackupSpec{
				EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: "db"},
				StorageType:  typ,
				BackupSource: b.Source("db/etcd.backup", secret),
			},
		})
		if bk := f.WaitBackupCompleted(t, ns, name, 3*time.Minute); bk.Status.Location != fmt.Sprintf("%s://%s/db/etcd.backup", typ, b.Name) {
			t.Errorf("backup %s: status.location %q, want %s://%s/db/etcd.backup", name, bk.Status.Location, typ, b.Name)
		}
		drills["drill-"+strings.ToLower(string(typ))] = etcdv1beta2.RestoreSpec{BackupStorageType: typ, BackupSource: b.Source("db/etcd.backup", secret)}
	}
	for name, spec := range drills {
		spec.EtcdCluster = etcdv1beta2.EtcdClusterRef{Name: "db-" + name}
		spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "db"}
		spec.TTLSecondsAfterFinished = ptr.To[int32](5)
		f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})
	}
	for name := range drills {
		rs := f.WaitRestoreSucceeded(t, ns, name, 8*time.Minute)
		if v := rs.Status.Verification; !v.Passed || v.Keys < keys || v.MembersVerified != 3 {
			t.Fatalf("%s: verification %+v", name, *v)
		}
		t.Logf("%s from %s: RTO %s, verification %+v", name, rs.Status.BackupLocation, rs.Status.Duration.Duration, *rs.Status.Verification)
	}
	if got := framework.KeyspaceSHA256(t, cli, prefix); got != want {
		t.Fatal("the original's keyspace changed during the drills")
	}
	framework.PutDataset(t, cli, "/after-drill/", 0, 10)
	for name := range drills {
		framework.Eventually(t, time.Minute, "scratch cluster db-"+name+" deleted after its TTL", func(ctx context.Context) (bool, error) {
			_, err := f.GetCluster(ctx, ns, "db-"+name)
			return client.IgnoreNotFound(err) == nil && err != nil, fmt.Errorf("still there: %v", err)
		})
	}

	// 4. The disaster: every member pod and volume of db is gone.
	disaster := time.Now()
	for _, list := range []client.ObjectList{&corev1.PodList{}, &corev1.PersistentVolumeClaimList{}} {
		if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": "db"}); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		for _, o := range items {
			if err := f.Client.Delete(ctx, o.(client.Object), client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
	f.Create(t, coreosRestore(ns, "db", "db", bucket.Source("db/etcd.backup", "aws")))
	// Kill the restore operator while the restore is under way.
	framework.Eventually(t, 3*time.Minute, "restore db under way", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "db")
		if err != nil {
			return false, err
		}
		return rs.Status.Phase == etcdv1beta2.RestorePhaseSeeding || rs.Status.Phase == etcdv1beta2.RestorePhaseGrowing, fmt.Errorf("phase %q", rs.Status.Phase)
	})
	if out, errOut, err := f.Kubectl(ctx, "-n", "etcd-operator-system", "delete", "pod", "-l", "app.kubernetes.io/name=restore-operator", "--wait=false"); err != nil {
		t.Fatalf("killing the restore operator: %v %s %s", err, out, errOut)
	}
	rs := f.WaitRestoreSucceeded(t, ns, "db", 8*time.Minute)
	total := time.Since(disaster)
	f.WaitClusterAvailable(t, ns, "db", 3, time.Minute)
	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	n, diffs := framework.CheckDataset(t, cli, prefix, keys)
	if len(diffs) > 0 {
		t.Fatalf("restored cluster: %d keys, differences: %s", n, strings.Join(diffs, "; "))
	}
	if got := framework.KeyspaceSHA256(t, cli, prefix); got != want {
		t.Fatal("restored keyspace hash differs from the one before the backup")
	}
	// Every member was restored from the backup at once (its pod has the restore step), none
	// replicated through raft after the seed, and the restored cluster alone owns it: the etcd
	// operator built it from bootstrap.restore.source.
	restored, err := f.GetCluster(ctx, ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": "db"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d member pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); !restoreboot.IsRestorePod(&p) || ref == nil || ref.UID != restored.UID || len(p.OwnerReferences) != 1 {
			t.Errorf("member %s was not restored from the backup by the restored cluster: owners %v, init containers %d", p.Name, p.OwnerReferences, len(p.Spec.InitContainers))
		}
	}
	v := rs.Status.Verification
	if !v.Passed || v.MembersVerified != 3 || rs.Status.RestoredRevision < backup.Status.EtcdRevision {
		t.Fatalf("verification %+v, restored revision %d, backup revision %d", *v, rs.Status.RestoredRevision, backup.Status.EtcdRevision)
	}
	t.Logf("RTO of the %d-key restore: %s in status (disaster to verified: %s); backup %d bytes; verification %+v",
		keys, rs.Status.Duration.Duration, total.Round(time.Millisecond), rs.Status.BackupSize, *v)
}

// clusterOnVolumes is a 3-member EtcdCluster whose members have volumes of the given size.
func clusterOnVolumes(ns, name, size string) *etcdv1beta2.EtcdCluster {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
	return c
}

func coreosRestore(ns, name, cluster string, src etcdv1beta2.BackupSource) *etcdv1beta2.EtcdRestore {
	return &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
			BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource:      src,
		},
	}
}

// copyObject copies an object within the bucket.
func copyObject(t testing.TB, b *framework.Bucket, from, to string) {
	t.Helper()
	rc, err := b.Backend().Get(t.Context(), from)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Backend().Put(t.Context(), to, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}
