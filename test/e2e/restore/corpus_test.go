//go:build e2e

package restore

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/testutil/keyspace"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestRestoreCorpus: the keyspaces real clients leave (internal/testutil/keyspace: a service
// registry on leases, clientv3 concurrency locks and elections, a compacted history with
// transactions and 1 MiB values, users and roles under authentication), written into one
// operator-managed 3-member cluster with spec.auth, are backed up, restored into a new name
// (while the source serves) and in place, and each restored cluster serves at the backup's
// revision exactly what the source served there, key by key, every lease with its keys and
// granted TTL. Before issue 35 both restores failed on the leased keys.
func TestRestoreCorpus(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "corpus")
	const password = "corpus-e2e-root"
	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-root"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("root"), "password": []byte(password)}})
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Auth: &etcdv1beta2.AuthPolicy{SecretName: "etcd-root"}}})
	f.WaitClusterAvailable(t, ns, "src", 3, 5*time.Minute)
	waitAuthOn(t, f, ns, "src")
	endpoint := framework.ClientEndpoint(ns, "src")
	src := &keyspace.Source{Endpoint: endpoint, Username: "root", Password: password, Client: f.EtcdClientAs(t, "root", password, endpoint),
		Login: func(user, password string) *clientv3.Client { return f.EtcdClientAs(t, user, password, endpoint) }}
	keyspace.FillAll(t, src)

	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src-backup"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "src"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("src/etcd.backup", "aws")},
	})
	backup := f.WaitBackupCompleted(t, ns, "src-backup", 3*time.Minute)
	want := keyspace.Capture(t, src.Client, backup.Status.EtcdRevision)
	t.Logf("backup: %d bytes at revision %d, %d keys on %d leases", backup.Status.Size, backup.Status.EtcdRevision, len(want.KVs), len(want.Granted))

	// Into a new name, while the source serves.
	f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "copy"}, ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "src"},
		BackupRef: &etcdv1beta2.LocalObjectReference{Name: "src-backup"},
	}})
	rs := f.WaitRestoreSucceeded(t, ns, "copy", 8*time.Minute)
	waitAuthOn(t, f, ns, "copy")
	n := checkRaised(t, want, rs, f.EtcdClientAs(t, "root", password, framework.ClientEndpoint(ns, "copy")))
	t.Logf("into a new name in %s: %d keys equal, verification %+v", rs.Status.Duration.Duration, n, *rs.Status.Verification)

	// In place: the source is replaced by the backup, its applications stopped first (a lock
	// waiter left running deletes its own key on the restored cluster).
	src.StopSessions()
	f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "src"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "src-backup"},
	}})
	rs = f.WaitRestoreSucceeded(t, ns, "src", 8*time.Minute)
	f.WaitClusterAvailable(t, ns, "src", 3, 2*time.Minute)
	waitAuthOn(t, f, ns, "src")
	n = checkRaised(t, want, rs, f.EtcdClientAs(t, "root", password, endpoint))
	t.Logf("in place in %s: %d keys equal, verification %+v", rs.Status.Duration.Duration, n, *rs.Status.Verification)
}

// checkRaised checks that the cluster rs restored serves the captured keyspace, with every key's
// own revisions, at the revision the restore raised it to (revisionBump, default 1e9 above the
// backup's), and that a read just after the backup's revision, as a client that saw newer
// revisions before the restore makes, is told it is compacted.
func checkRaised(t *testing.T, want *keyspace.Captured, rs *etcdv1beta2.EtcdRestore, cli *clientv3.Client) int {
	t.Helper()
	at := rs.Status.Verification.Revision
	if at < want.Revision+etcdv1beta2.DefaultRevisionBump {
		t.Fatalf("restored cluster verified at revision %d: not raised by %d above the backup's %d", at, int64(etcdv1beta2.DefaultRevisionBump), want.Revision)
	}
	n := want.CheckAt(t, cli, at)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Get(ctx, "x", clientv3.WithRev(want.Revision+1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("a read at revision %d, after the backup's: %v, want compacted", want.Revision+1, err)
	}
	return n
}
