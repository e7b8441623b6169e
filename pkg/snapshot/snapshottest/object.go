package snapshottest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// ObjectSHA256 reads the object stored under key and returns its hex sha256 and size.
func ObjectSHA256(t testing.TB, b backend.Backend, key string) (string, int64) {
	t.Helper()
	rc, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}
