//go:build e2e

package restore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestEncryptedBackup: a backup compressed with zstd and encrypted with age to the identity in
// a Secret is stored as an age file that decrypts by hand (age, then zstd) to exactly the
// snapshot the backup recorded; it is checked against the live cluster's HashKV on the way
// in, restores into a scratch cluster as a drill does (verified on every member, deleted after
// its TTL), and an in-place restore of the cluster with another key, or without encryption
// configured, fails with DecryptionFailed while the backup is verified, before anything is
// touched: the cluster keeps its pods, its spec and its keys.
func TestEncryptedBackup(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "encrypted")
	ctx := t.Context()
	const n = 5000

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	db := f.WaitClusterAvailable(t, ns, "db", 1, 3*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, n)
	want := framework.KeyspaceSHA256(t, cli, prefix)

	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	id, wrong := newAgeIdentity(t), newAgeIdentity(t)
	for name, key := range map[string]*age.X25519Identity{"age-keys": id, "wrong-keys": wrong} {
		f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{etcdv1beta2.EncryptionIdentityKey: "# public key: " + key.Recipient().String() + "\n" + key.String() + "\n"}})
	}
	encrypted := func(key, secret string) etcdv1beta2.BackupSource {
		src := bucket.Source(key, "aws")
		if secret != "" {
			src.Encryption = &etcdv1beta2.BackupEncryption{SecretName: secret}
		}
		return src
	}

	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "enc"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: bucket.Type,
			BackupSource: encrypted("db/enc.backup", "age-keys"), Compression: etcdv1beta2.CompressionZstd,
		},
	})
	backup := f.WaitBackupCompleted(t, ns, "enc", 3*time.Minute)
	st := backup.Status
	if st.Format != "zstd+age" || st.KeyspaceCheck == nil || !st.KeyspaceCheck.Checked {
		t.Fatalf("backup format %q, keyspace check %+v: want zstd+age, checked against the live cluster", st.Format, st.KeyspaceCheck)
	}

	// By hand: the object is an age file; decrypted and decompressed it is the snapshot whose
	// size and sha256 the backup recorded.
	file := filepath.Join(t.TempDir(), "enc.backup")
	_, stored := bucket.Download(t, "db/enc.backup", file)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("age-encryption.org/v1\n")) {
		t.Fatalf("the stored object starts with %q, want an age header", raw[:min(len(raw), 22)])
	}
	plain, format, err := codec.NewReader(bytes.NewReader(raw), []age.Identity{id})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	size, err := io.Copy(h, plain)
	plain.Close()
	if err != nil || format.String() != "zstd+age" || size != st.Size || hex.EncodeToString(h.Sum(nil)) != st.SHA256 {
		t.Fatalf("decrypted by hand: %d bytes (%v, format %s), sha256 %x; the backup recorded %d bytes, sha256 %s", size, err, format, h.Sum(nil), st.Size, st.SHA256)
	}
	t.Logf("backup: snapshot of %d bytes stored as %d bytes (%s), HashKV checked at revision %d", st.Size, stored, st.Format, st.KeyspaceCheck.Revision)

	// Restore drill: into a scratch cluster, verified, deleted after its TTL.
	f.Create(t, &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "enc-drill"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "enc-drill"}, ClusterTemplate: &etcdv1beta2.EtcdClusterRef{Name: "db"},
		BackupRef: &etcdv1beta2.LocalObjectReference{Name: "enc"}, TTLSecondsAfterFinished: ptr.To[int32](5),
	}})
	rs := f.WaitRestoreSucceeded(t, ns, "enc-drill", 5*time.Minute)
	if v := rs.Status.Verification; v == nil || !v.Passed || v.Keys != n || rs.Status.BackupSHA256 != st.SHA256 {
		t.Fatalf("drill verification %+v, sha256 %s: want %d keys, the backup's sha256", v, rs.Status.BackupSHA256, n)
	}
	if src := rs.Status.Source; src == nil || src.Encryption == nil || src.Encryption.SecretName != "age-keys" {
		t.Fatalf("drill's pinned source %+v: want the backup's encryption", src)
	}
	t.Logf("drill restored the encrypted backup in %s", rs.Status.Duration.Duration)

	// A wrong key, and no key: refused while verifying, before anything is touched.
	pods := memberPods(t, f, ns, "db")
	for name, src := range map[string]etcdv1beta2.BackupSource{"wrong-key": encrypted("db/enc.backup", "wrong-keys"), "no-key": encrypted("db/enc.backup", "")} {
		f.Create(t, coreosRestore(ns, name, "db", src))
		rs := f.WaitRestoreFinished(t, ns, name, 2*time.Minute)
		c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
		v := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupVerified)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != etcdv1beta2.ReasonDecryptionFailed || v == nil || v.Status != metav1.ConditionFalse ||
			!strings.Contains(c.Message, "encryption") {
			t.Fatalf("%s: Failed %+v, BackupVerified %+v; want DecryptionFailed while verifying, saying what to set", name, c, v)
		}
		t.Logf("%s refused: %s", name, c.Message)
	}
	c, err := f.GetCluster(ctx, ns, "db")
	if err != nil || c.UID != db.UID || c.DeletionTimestamp != nil || c.Spec.Bootstrap != nil {
		t.Fatalf("cluster db touched by a refused restore: %v", err)
	}
	if after := memberPods(t, f, ns, "db"); !maps.Equal(pods, after) {
		t.Fatalf("db's member pods changed: %v -> %v", pods, after)
	}
	if got := framework.KeyspaceSHA256(t, cli, prefix); got != want {
		t.Fatal("db's keyspace changed")
	}
	framework.Eventually(t, time.Minute, "the drill's scratch cluster deleted after its TTL", func(ctx2 context.Context) (bool, error) {
		_, err := f.GetCluster(ctx2, ns, "enc-drill")
		return client.IgnoreNotFound(err) == nil && err != nil, err
	})
}

func newAgeIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// memberPods maps the member pods of cluster to their UIDs.
func memberPods(t *testing.T, f *framework.Framework, ns, cluster string) map[string]string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": cluster}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}
