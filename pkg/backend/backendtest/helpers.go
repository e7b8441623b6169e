// Package backendtest holds AcceptanceTest, which checks the whole backend.Backend contract
// against one provider, and the helpers the provider tests share (Env, UniqueName).
package backendtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	mrand "math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// RequireEnv is the variable that turns a missing object-store environment into a test failure
// instead of a skip; `make test` sets it after starting the servers so CI cannot skip silently.
const RequireEnv = "OBJSTORES_REQUIRED"

// Env returns the values of the named environment variables (written by `hack/objstores.sh up`
// into .cache/objstores/env). If any is unset the test is skipped, or fails when RequireEnv is 1.
func Env(t testing.TB, names ...string) map[string]string {
	t.Helper()
	vals := make(map[string]string, len(names))
	var missing []string
	for _, n := range names {
		v, ok := os.LookupEnv(n)
		if !ok || v == "" {
			missing = append(missing, n)
			continue
		}
		vals[n] = v
	}
	if len(missing) == 0 {
		return vals
	}
	msg := "object store not configured (" + strings.Join(missing, ", ") +
		" unset): run `hack/objstores.sh up` and `source .cache/objstores/env`"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + "; " + RequireEnv + "=1 forbids skipping")
	}
	t.Skip(msg)
	return nil
}

// UniqueName returns prefix followed by a random lowercase hex suffix, valid as an S3 bucket,
// GCS bucket or Azure container name when prefix is.
func UniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	r := mrand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// streamOnly hides every interface of r but io.Reader, as a snapshot stream would.
type streamOnly struct{ r io.Reader }

func (s streamOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

var errInjected = errors.New("injected read failure")

// breakingReader returns data, and after failAfter bytes either an error (cancel nil) or, when
// cancel is set, calls it once and keeps returning data, as a stream whose consumer gives up.
type breakingReader struct {
	data      []byte
	off       int
	failAfter int
	cancel    context.CancelFunc
}

func (b *breakingReader) Read(p []byte) (int, error) {
	if b.off >= b.failAfter {
		if b.cancel == nil {
			return 0, errInjected
		}
		b.cancel()
	}
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	limit := len(b.data)
	if b.off < b.failAfter {
		limit = b.failAfter
	}
	n := copy(p, b.data[b.off:limit])
	b.off += n
	return n, nil
}

func put(t *testing.T, b backend.Backend, key string, data []byte) {
	t.Helper()
	if err := b.Put(t.Context(), key, streamOnly{bytes.NewReader(data)}); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// readAll reads rc to the end, closes it and returns its sha256 and length.
func readAll(t *testing.T, rc io.ReadCloser) (string, int64) {
	t.Helper()
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("reading object: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func get(t *testing.T, b backend.Backend, key string) (string, int64) {
	t.Helper()
	rc, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return readAll(t, rc)
}
