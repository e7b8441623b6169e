package etcdbackup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubeid"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestPeriodicBackupLeavesAnotherKubernetesClustersBackups (issue 30 item 5): another
// Kubernetes cluster runs an EtcdCluster of the same namespace and name and backs it up under
// the same prefix. This one's periodic backups (maxBackups 1) carry this Kubernetes cluster's
// identity (the kube-system namespace's UID, hashed), its retention deletes only its own older
// backups, never the other Kubernetes cluster's, and leaves the name's backups without a
// Kubernetes identity alone with one Warning event that names the other Kubernetes cluster.
// Before keys carried the identity, both were "ns/a" and the first retention here deleted the
// other's backups.
func TestPeriodicBackupLeavesAnotherKubernetesClustersBackups(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	ns := namespace(t)
	createSecret(t, ns, "aws", bucket.Secret)
	here := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: kubeid.Namespace}, here); err != nil {
		t.Fatal(err)
	}
	kube := kubeid.Of(string(here.UID))
	clusterOf(t, ns, "a", e)

	const prefix = "fleet/etcd.backup"
	b := newBackup(ns, "periodic", []string{e.Endpoint}, bucket, prefix, "aws")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 1, MaxBackups: 1}
	past := time.Now().Add(-48 * time.Hour)
	elsewhere := snapshot.Identity{Namespace: ns, Cluster: "a", ClusterID: 0x0123456789abcdef}
	const otherKube = "00000000000000ea"
	theirs := []string{
		snapshot.ClusterKeyIn(prefix, elsewhere, otherKube, 3, past),
		snapshot.ClusterKeyIn(prefix, elsewhere, otherKube, 4, past.Add(time.Hour)),
	}
	unattributed := snapshot.ClusterKey(prefix, elsewhere, 2, past.Add(-time.Hour))
	store := putObjects(t, ns, &b.Spec, append(slices.Clone(theirs), unattributed)...)
	create(t, b)

	seen := waitRounds(t, b, 3)
	// Retention settles on this Kubernetes cluster's newest backup, and everything seeded stays.
	testutil.Eventually(t, 20*time.Second, "one backup of this Kubernetes cluster", func() (bool, string) {
		keys := listKeys(t, store, "fleet/")
		var own []string
		for _, k := range keys {
			if info, ok := snapshot.ParseKey(prefix, k); ok && info.Kube == kube {
				own = append(own, k)
			}
		}
		for _, k := range append(slices.Clone(theirs), unattributed) {
			if !slices.Contains(keys, k) {
				t.Fatalf("%s was deleted; left %v", k, keys)
			}
		}
		return len(own) == 1 && len(keys) == 4, strings.Join(keys, " ")
	})
	for loc := range seen {
		if !strings.HasSuffix(loc, "_k"+kube) {
			t.Fatalf("backup %s does not end in this Kubernetes cluster's identity _k%s", loc, kube)
		}
	}
	checkLegacyKeptOnce(t, ns, "periodic", otherKube, len(seen))
}
