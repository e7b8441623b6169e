package storage

import (
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// testID is an age X25519 identity, and testIdentity the Secret value age-keygen writes for it
// (comments included).
var testID, testIdentity = func() (*age.X25519Identity, string) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		panic(err)
	}
	return id, "# created: 2026-11-28T02:00:00Z\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
}()

// TestEncryptionSecret: what a Location's encryption Secret gives: an identity alone writes to
// its own public key and reads; recipients alone write but cannot read; both write to the
// recipients; a Secret with neither key, or with keys that do not parse, is EncryptionKeyInvalid
// without quoting the key; a missing Secret is SecretNotFound. Compression is independent.
func TestEncryptionSecret(t *testing.T) {
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	own := testID.Recipient().String()
	for _, tc := range []struct {
		name       string
		data       map[string]string // nil: no Secret
		ids        int
		recipient  string // the single recipient written to
		wantReason string
	}{
		{name: "identity", data: map[string]string{"identity": testIdentity}, ids: 1, recipient: own},
		{name: "recipients only", data: map[string]string{"recipients": "# the offline key\n" + other.Recipient().String() + "\n"}, recipient: other.Recipient().String()},
		{name: "both", data: map[string]string{"identity": testIdentity, "recipients": other.Recipient().String()}, ids: 1, recipient: other.Recipient().String()},
		{name: "neither", data: map[string]string{"key": "x"}, wantReason: etcdv1beta2.ReasonEncryptionKeyInvalid},
		{name: "bad identity", data: map[string]string{"identity": "AGE-SECRET-KEY-1NOTAKEY"}, wantReason: etcdv1beta2.ReasonEncryptionKeyInvalid},
		{name: "bad recipient", data: map[string]string{"identity": testIdentity, "recipients": "age1notakey"}, wantReason: etcdv1beta2.ReasonEncryptionKeyInvalid},
		{name: "missing", wantReason: etcdv1beta2.ReasonSecretNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.data != nil {
				writeSecret(t, root+"/age-keys", tc.data)
			}
			l := Location{Type: "S3", Bucket: "bk", Key: "k", Encryption: "age-keys", Compress: true}
			enc, err := l.encoding(t.Context(), DirSecrets{Root: root})
			if tc.wantReason != "" {
				if reason.Of(err) != tc.wantReason {
					t.Fatalf("err %v, want reason %s", err, tc.wantReason)
				}
				if strings.Contains(err.Error(), "AGE-SECRET-KEY-1") {
					t.Fatalf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !enc.Write.Compress || len(enc.Identities) != tc.ids || len(enc.Write.Recipients) != 1 {
				t.Fatalf("encoding: compress %t, %d identities, %d recipients", enc.Write.Compress, len(enc.Identities), len(enc.Write.Recipients))
			}
			if got := enc.Write.Recipients[0].(*age.X25519Recipient).String(); got != tc.recipient {
				t.Fatalf("writes to %s, want %s", got, tc.recipient)
			}
		})
	}
}
