package etcdbackup

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestEncodedBackups backs a real etcd up into MinIO compressed, encrypted, or both: the
// object stored is in the format status.format says (an age file, or a zstd frame smaller than
// the snapshot), and reads back through the store as the snapshot whose size and sha256 the
// status records. With the identity in the Secret the backup is checked against the live
// member; with recipients only, the operator cannot read what it wrote, so the check is
// skipped and says why. A Secret without a usable key fails the backup with
// EncryptionKeyInvalid before anything is stored.
func TestEncodedBackups(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	// A prefix long enough that ciphertext cannot hold it by chance: "/k/" (3 bytes) turned up
	// in about one 330 KB age file in fifty, and failed CI once.
	const clear = "/keys-written-in-the-clear/"
	snapshottest.Put(t, e.Client(t), clear, 300, 1024)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		secret   map[string][]byte // nil: no encryption
		compress bool
		format   string
		checked  bool
		reason   string // a failed backup's
	}{
		{name: "zstd", compress: true, format: "zstd", checked: true},
		{name: "age", secret: map[string][]byte{"identity": []byte(id.String())}, format: "age", checked: true},
		{name: "zstd+age", secret: map[string][]byte{"identity": []byte(id.String())}, compress: true, format: "zstd+age", checked: true},
		{name: "recipients only", secret: map[string][]byte{"recipients": []byte(id.Recipient().String())}, format: "age"},
		{name: "no key", secret: map[string][]byte{"other": []byte("x")}, reason: etcdv1beta2.ReasonEncryptionKeyInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			bucket := storagetest.NewS3Bucket(t)
			createSecret(t, ns, "creds", bucket.Secret)
			b := newBackup(ns, "enc", []string{e.Endpoint}, bucket, "etcd.backup", "creds")
			if tc.secret != nil {
				createSecret(t, ns, "age-keys", tc.secret)
				b.Spec.Encryption = &etcdv1beta2.BackupEncryption{SecretName: "age-keys"}
			}
			if tc.compress {
				b.Spec.Compression = etcdv1beta2.CompressionZstd
			}
			create(t, b)
			raw := bucket.S3Backend(t)
			if tc.reason != "" {
				b = waitPhase(t, ns, "enc", etcdv1beta2.BackupPhaseFailed, 60*time.Second)
				if got := failedReason(t, b); got != tc.reason {
					t.Fatalf("failed with %s, want %s", got, tc.reason)
				}
				if _, err := raw.Stat(t.Context(), "etcd.backup"); !backend.IsNotFound(err) {
					t.Fatalf("an object was stored: %v", err)
				}
				return
			}
			b = waitPhase(t, ns, "enc", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
			st := b.Status
			if st.Format != tc.format {
				t.Fatalf("status.format %q, want %q", st.Format, tc.format)
			}
			rc, err := raw.Get(t.Context(), "etcd.backup")
			if err != nil {
				t.Fatal(err)
			}
			stored, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := codec.Sniff(stored); got.Encrypted != strings.Contains(tc.format, "age") || (tc.format == "zstd" && !got.Compressed) {
				t.Fatalf("the stored object sniffs as %s, want %s", got, tc.format)
			}
			if tc.format == "zstd" && int64(len(stored)) >= st.Size {
				t.Errorf("compressed object has %d bytes, the snapshot %d", len(stored), st.Size)
			}
			if bytes.Contains(stored, []byte(clear)) && strings.Contains(tc.format, "age") {
				t.Fatal("the encrypted object holds a key in the clear")
			}
			if tc.checked {
				if sum, size := objectSHA256(t, b); sum != st.SHA256 || size != st.Size {
					t.Fatalf("read back %s/%d, status %s/%d", sum, size, st.SHA256, st.Size)
				}
			}
			kc := st.KeyspaceCheck
			if kc == nil || kc.Checked != tc.checked || (!tc.checked && !strings.Contains(kc.Skipped, "no age identity")) {
				t.Fatalf("status.keyspaceCheck %+v, want checked %t (or skipped for want of an identity)", kc, tc.checked)
			}
		})
	}
}
