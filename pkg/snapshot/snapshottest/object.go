package snapshottest

import (
	"bytes"
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

// Unrestorable returns a copy of the etcd snapshot snap (a bbolt file and etcd's trailing
// sha256) that every checksum accepts but etcd cannot restore: the magic number of both bbolt
// meta pages is overwritten (pages 0 and 1; bbolt's page size is 4096 bytes on the platforms
// the tests run on) and etcd's trailing sha256 computed again over the changed file.
func Unrestorable(snap []byte) []byte {
	const pageSize, pageHeader = 4096, 16
	out := bytes.Clone(snap)
	for _, page := range []int{0, 1} {
		copy(out[page*pageSize+pageHeader:], []byte{0xde, 0xad, 0xbe, 0xef})
	}
	body := len(out) - sha256.Size
	sum := sha256.Sum256(out[:body])
	copy(out[body:], sum[:])
	return out
}
