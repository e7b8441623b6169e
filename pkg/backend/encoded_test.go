package backend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
)

// TestPlainEncodingAcceptance: a store without compression or encryption keeps the whole
// Backend contract (sizes included).
func TestPlainEncodingAcceptance(t *testing.T) {
	backendtest.AcceptanceTest(t, backend.WithEncoding(memory.New(), backend.Encoding{}))
}

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// payload is 3 MiB: half compressible text, half random.
func payload(t *testing.T) []byte {
	t.Helper()
	data := bytes.Repeat([]byte("etcd revision 42 key /registry/pods/default/nginx value "), (3<<20)/2/56)
	random := make([]byte, 3<<20-len(data))
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	return append(data, random...)
}

func readAll(t *testing.T, b backend.Backend, key string) []byte {
	t.Helper()
	rc, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return got
}

// TestEncodingRoundTrip: each format is stored as it says (the stored bytes sniff as that
// format, and a compressed object is smaller), reads back byte for byte, and a range of it
// reads back as the same range of the plaintext.
func TestEncodingRoundTrip(t *testing.T) {
	id := newIdentity(t)
	data := payload(t)
	for _, o := range []codec.Options{
		{},
		{Compress: true},
		{Recipients: []age.Recipient{id.Recipient()}},
		{Compress: true, Recipients: []age.Recipient{id.Recipient()}},
	} {
		t.Run(o.Format().String(), func(t *testing.T) {
			raw := memory.New()
			b := backend.WithEncoding(raw, backend.Encoding{Write: o, Identities: []age.Identity{id}})
			if err := b.Put(t.Context(), "k", bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			stored := readAll(t, raw, "k")
			if got := codec.Sniff(stored); got.Encrypted != o.Format().Encrypted || (!o.Format().Encrypted && got != o.Format()) {
				t.Fatalf("stored object sniffs as %s, want %s", got, o.Format())
			}
			if o.Compress && !o.Format().Encrypted && len(stored) >= len(data) {
				t.Errorf("compressed object has %d bytes, the plaintext %d", len(stored), len(data))
			}
			if info, err := b.Stat(t.Context(), "k"); err != nil || info.Size != int64(len(stored)) {
				t.Errorf("Stat = %+v, %v; want the stored size %d", info, err, len(stored))
			}
			if got := readAll(t, b, "k"); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
			}
			rc, err := b.GetRange(t.Context(), "k", 1<<20, 4096)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data[1<<20:1<<20+4096]) {
				t.Fatalf("GetRange: %d bytes, %v; want the plaintext's range", len(got), err)
			}
		})
	}
}

// TestEncodingMixedPrefix: objects written before encryption was turned on stay readable
// through the encrypting store, and an encrypted object fails Get at once, with ErrNoKey
// through a store without identities and ErrWrongKey through one with another identity.
func TestEncodingMixedPrefix(t *testing.T) {
	id, other := newIdentity(t), newIdentity(t)
	raw := memory.New()
	plain := backend.WithEncoding(raw, backend.Encoding{})
	enc := backend.WithEncoding(raw, backend.Encoding{
		Write:      codec.Options{Compress: true, Recipients: []age.Recipient{id.Recipient()}},
		Identities: []age.Identity{id},
	})
	if err := plain.Put(t.Context(), "p/old", bytes.NewReader([]byte("written plain"))); err != nil {
		t.Fatal(err)
	}
	if err := enc.Put(t.Context(), "p/new", bytes.NewReader([]byte("written encrypted"))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, enc, "p/old"); string(got) != "written plain" {
		t.Fatalf("plain object through the encrypting store: %q", got)
	}
	if got := readAll(t, enc, "p/new"); string(got) != "written encrypted" {
		t.Fatalf("encrypted object: %q", got)
	}
	if _, err := plain.Get(t.Context(), "p/new"); !errors.Is(err, codec.ErrNoKey) {
		t.Errorf("Get of an encrypted object without identities: %v, want ErrNoKey", err)
	}
	wrong := backend.WithEncoding(raw, backend.Encoding{Identities: []age.Identity{other}})
	if _, err := wrong.Get(t.Context(), "p/new"); !errors.Is(err, codec.ErrWrongKey) {
		t.Errorf("Get with another identity: %v, want ErrWrongKey", err)
	}
	if _, err := wrong.Get(t.Context(), "p/missing"); !backend.IsNotFound(err) {
		t.Errorf("Get of a missing key: %v, want not found", err)
	}
}

// failingReader returns n bytes, then err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

// TestEncodingFailedUpload: a source that fails mid-way, or a cancelled context, leaves no
// object and an error wrapping the cause, whatever the encoding; the encoder's goroutine ends.
func TestEncodingFailedUpload(t *testing.T) {
	id := newIdentity(t)
	cause := errors.New("snapshot stream cut")
	b := backend.WithEncoding(memory.New(), backend.Encoding{Write: codec.Options{Compress: true, Recipients: []age.Recipient{id.Recipient()}}})
	if err := b.Put(t.Context(), "cut", &failingReader{n: 1 << 20, err: cause}); !errors.Is(err, cause) {
		t.Fatalf("Put of a failing source: %v, want it to wrap the source's error", err)
	}
	if _, err := b.Stat(t.Context(), "cut"); !backend.IsNotFound(err) {
		t.Fatalf("after a failed upload Stat: %v, want not found", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Put(ctx, "cancelled", bytes.NewReader(payload(t))); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if _, err := b.Stat(t.Context(), "cancelled"); !backend.IsNotFound(err) {
		t.Fatalf("after a cancelled upload Stat: %v, want not found", err)
	}
}

// refusing is a Backend whose Put fails at once without reading.
type refusing struct{ backend.Backend }

func (refusing) Put(context.Context, string, io.Reader) error { return errors.New("access denied") }

// stalled blocks in Read until release is closed.
type stalled struct{ release chan struct{} }

func (s stalled) Read([]byte) (int, error) {
	<-s.release
	return 0, io.EOF
}

// TestEncodingPutFailsWhileSourceStalls: a store that refuses the upload at once makes Put
// return at once, although the source (a snapshot stream that stalled) has not answered: the
// encoder reading it is not waited for.
func TestEncodingPutFailsWhileSourceStalls(t *testing.T) {
	src := stalled{release: make(chan struct{})}
	defer close(src.release)
	b := backend.WithEncoding(refusing{memory.New()}, backend.Encoding{Write: codec.Options{Compress: true}})
	done := make(chan error, 1)
	go func() { done <- b.Put(t.Context(), "k", src) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("Put = %v, want the store's refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Put waited for a stalled source after the store refused the upload")
	}
}
