package codec

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	bolt "go.etcd.io/bbolt"
)

func TestFormatString(t *testing.T) {
	want := []string{"plain", "zstd", "age", "zstd+age"}
	for i, f := range allFormats {
		if got := f.String(); got != want[i] {
			t.Errorf("%#v.String() = %q, want %q", f, got, want[i])
		}
		if got := optionsFor(t, f).Format(); got != f {
			t.Errorf("Options for %v: Format() = %v", f, got)
		}
	}
}

// TestRoundTrip writes empty, one-byte and 64 MiB (mixed compressible and random, written in odd
// sized chunks) inputs in every format and reads them back: same bytes, the format written
// reported by NewReader and, outside the encryption, by Sniff.
func TestRoundTrip(t *testing.T) {
	ids := mustIdentities(t, testKeyFile)
	inputs := map[string][]byte{
		"empty":  {},
		"1 byte": {0x28}, // the first byte of the zstd magic
		"64 MiB": mixedData(64<<20, 1, true),
	}
	for _, f := range allFormats {
		for name, data := range inputs {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				var obj bytes.Buffer
				w, err := NewWriter(&obj, optionsFor(t, f))
				if err != nil {
					t.Fatal(err)
				}
				in := sha256.New()
				if err := chunkedWrite(w, in, data); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatalf("second Close: %v", err)
				}
				if _, err := w.Write([]byte{1}); err == nil {
					t.Error("Write after Close succeeded")
				}
				stored := obj.Bytes()
				if f == (Format{}) && !bytes.Equal(stored, data) {
					t.Fatal("plain object differs from its input")
				}
				sniffed := Sniff(stored[:min(len(stored), SniffLen)])
				if want := (Format{Compressed: f.Compressed && !f.Encrypted, Encrypted: f.Encrypted}); sniffed != want {
					t.Errorf("Sniff = %v, want %v", sniffed, want)
				}

				r, got, err := NewReader(bytes.NewReader(stored), ids)
				if err != nil {
					t.Fatal(err)
				}
				if got != f {
					t.Errorf("NewReader format = %v, want %v", got, f)
				}
				sum, n, err := hashingRead(r)
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(len(data)) || !bytes.Equal(sum, in.Sum(nil)) {
					t.Fatalf("read back %d bytes, sha256 %x; wrote %d, sha256 %x", n, sum, len(data), in.Sum(nil))
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Read(make([]byte, 1)); err == nil {
					t.Error("Read after Close succeeded")
				}
				t.Logf("%d bytes stored as %d", len(data), len(stored))
			})
		}
	}
}

// TestPlainPassThrough: a real bbolt file (what an etcd snapshot is) and arbitrary bytes that
// merely look like the start of a magic are plain, and NewReader returns them byte for byte,
// with or without identities.
func TestPlainPassThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("key"))
		if err != nil {
			return err
		}
		for i := range 1000 {
			if err := b.Put(fmt.Appendf(nil, "/registry/k%04d", i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	snapshot, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	cases := map[string][]byte{
		"bbolt":              snapshot,
		"short zstd magic":   zstdMagic[:3],
		"short age header":   ageMagic[:SniffLen-1],
		"age header, no LF":  append(ageMagic[:SniffLen-1:SniffLen-1], 'x', 'y'),
		"armored age":        []byte("-----BEGIN AGE ENCRYPTED FILE-----\n"),
		"zstd skippable":     {0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0},
		"mixed random bytes": mixedData(3<<20, 2, true),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if f := Sniff(data); f != (Format{}) {
				t.Errorf("Sniff = %v, want plain", f)
			}
			for _, ids := range [][]byte{nil, []byte(testKeyFile)} {
				parsed := mustIdentitiesOrNil(t, ids)
				out, f, err := decodeAll(data, parsed)
				if err != nil {
					t.Fatal(err)
				}
				if f != (Format{}) || !bytes.Equal(out, data) {
					t.Fatalf("format %v, %d bytes out of %d, equal %v", f, len(out), len(data), bytes.Equal(out, data))
				}
			}
		})
	}
}

// TestKeyErrors: an encrypted object read with no identity fails with ErrNoKey, with the wrong
// one with ErrWrongKey (carrying age's NoIdentityMatchError), both at NewReader, before any
// plaintext.
func TestKeyErrors(t *testing.T) {
	other := mustIdentities(t, otherKeyFile)
	for _, f := range allFormats[2:] {
		obj := encode(t, []byte("secret"), optionsFor(t, f))
		t.Run(f.String(), func(t *testing.T) {
			r, got, err := NewReader(bytes.NewReader(obj), nil)
			if !errors.Is(err, ErrNoKey) || r != nil {
				t.Errorf("no key: reader %v, err %v; want ErrNoKey", r, err)
			}
			if !got.Encrypted {
				t.Errorf("no key: format %v, want encrypted", got)
			}
			r, _, err = NewReader(bytes.NewReader(obj), other)
			if !errors.Is(err, ErrWrongKey) || r != nil {
				t.Fatalf("wrong key: reader %v, err %v; want ErrWrongKey", r, err)
			}
			var noMatch *age.NoIdentityMatchError
			if !errors.As(err, &noMatch) {
				t.Errorf("wrong key: %v does not wrap *age.NoIdentityMatchError", err)
			}
			if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoKey) {
				t.Errorf("wrong key: %v also matches another sentinel", err)
			}
			t.Logf("no key and wrong key: %v", err)
		})
	}
}

// mustIdentitiesOrNil parses keyFile, or returns nil for nil.
func mustIdentitiesOrNil(t *testing.T, keyFile []byte) []age.Identity {
	if keyFile == nil {
		return nil
	}
	return mustIdentities(t, string(keyFile))
}

// readErr reads obj through NewReader and returns the error that ended it (nil for a clean
// io.EOF) and how many plaintext bytes came before.
func readErr(obj []byte, ids []age.Identity) (int64, error) {
	r, _, err := NewReader(bytes.NewReader(obj), ids)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r)
	return n, err
}
