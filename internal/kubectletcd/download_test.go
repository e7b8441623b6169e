package kubectletcd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestSnapshotDownload downloads from a real MinIO bucket: by EtcdBackup name (its
// status.location, its Secret) the file matches the object and the printed sha256 is the
// object's; by location URL with --schedule a corrupted object (data that does not hash to
// its trailer) fails with the checksum mismatch and leaves no file behind.
func TestSnapshotDownload(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t)
	ns := testutil.Namespace(t, k8s, "download")
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
	s := newSchedule(t, ns, "nightly", "main", bucket.Type, bucket.Source("etcd/backup", "aws"), etcdv1beta2.BackupScheduleStatus{})
	loc, err := storage.FromSpec(&s.Spec.BackupTemplate.Spec)
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(t.Context(), loc, storage.APISecrets{Reader: k8s, Namespace: ns}, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	data := bytes.Repeat([]byte("etcd snapshot "), 10000)
	sum := sha256.Sum256(data)
	good := append(bytes.Clone(data), sum[:]...)
	bad := bytes.Clone(good)
	bad[100] ^= 0xff
	for key, obj := range map[string][]byte{"etcd/backup_good": good, "etcd/backup_bad": bad} {
		if err := store.Put(t.Context(), key, bytes.NewReader(obj)); err != nil {
			t.Fatal(err)
		}
	}
	b := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly-1"}, Spec: *s.Spec.BackupTemplate.Spec.DeepCopy()}
	if err := k8s.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	b.Status = etcdv1beta2.BackupStatus{Phase: etcdv1beta2.BackupPhaseCompleted, Location: store.URLOf("etcd/backup_good")}
	if err := k8s.Status().Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	file := filepath.Join(dir, "snap.db")
	r := run(t.Context(), now, ns, "snapshot", "download", "nightly-1", "-o", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	t.Log(r.out)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, good) {
		t.Fatalf("downloaded file: %d bytes (%v), want the object's %d", len(got), err, len(good))
	}
	whole := sha256.Sum256(good)
	mustContain(t, r.out, "etcd checksum verified, sha256 "+hex.EncodeToString(whole[:]))

	badFile := filepath.Join(dir, "bad.db")
	r = run(t.Context(), now, ns, "snapshot", "download", store.URLOf("etcd/backup_bad"), "--schedule", "nightly", "-o", badFile)
	if r.code != 1 || !strings.Contains(r.err, "snapshot checksum mismatch") {
		t.Errorf("corrupted object: exit %d, stderr %q; want the checksum mismatch", r.code, r.err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files after the failed download: %v, want only snap.db", entries)
	}
}
