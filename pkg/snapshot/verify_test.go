package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// fakeSnapshot returns n bytes of data followed by their sha256, as etcd streams a snapshot.
func fakeSnapshot(n int) []byte {
	data := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	sum := sha256.Sum256(data)
	return append(data, sum[:]...)
}

func TestVerifyingReaderGoodStream(t *testing.T) {
	for _, n := range []int{1, 31, 32, 33, readChunk - 1, readChunk, readChunk + 33, 3*readChunk + 7} {
		snap := fakeSnapshot(n)
		want := sha256.Sum256(snap)
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"plain":    func(r io.Reader) io.Reader { return r },
			"one byte": iotest.OneByteReader,
			"half":     iotest.HalfReader,
			"data+EOF": iotest.DataErrReader,
		} {
			vr := NewVerifyingReader(wrap(bytes.NewReader(snap)))
			var out bytes.Buffer
			// A small destination buffer exercises partial emits too.
			if _, err := io.CopyBuffer(&out, struct{ io.Reader }{vr}, make([]byte, 100)); err != nil {
				t.Fatalf("n=%d %s: %v", n, name, err)
			}
			if !bytes.Equal(out.Bytes(), snap) {
				t.Fatalf("n=%d %s: output differs from input (trailer must be kept)", n, name)
			}
			if !vr.Verified() || vr.Size() != int64(len(snap)) || vr.SHA256() != hex.EncodeToString(want[:]) {
				t.Fatalf("n=%d %s: verified=%t size=%d sha=%s", n, name, vr.Verified(), vr.Size(), vr.SHA256())
			}
		}
	}
}

func TestVerifyingReaderFlippedByte(t *testing.T) {
	for _, pos := range []int{0, 1000, 200_000 - 1, 200_000, 200_000 + 31} { // data and trailer
		snap := fakeSnapshot(200_000)
		snap[pos] ^= 0x01
		vr := NewVerifyingReader(bytes.NewReader(snap))
		n, err := io.Copy(io.Discard, vr)
		if !errors.Is(err, ErrChecksumMismatch) {
			t.Fatalf("flip at %d: err = %v, want ErrChecksumMismatch", pos, err)
		}
		if n > int64(len(snap)-TrailerSize) {
			t.Fatalf("flip at %d: %d bytes released, the trailer must be held back", pos, n)
		}
		if _, err := vr.Read(make([]byte, 10)); !errors.Is(err, ErrChecksumMismatch) {
			t.Fatalf("error must be sticky, got %v", err)
		}
	}
}

func TestVerifyingReaderTruncated(t *testing.T) {
	snap := fakeSnapshot(200_000)
	for _, cut := range []int{0, 10, TrailerSize, 100_000, len(snap) - 1} {
		vr := NewVerifyingReader(bytes.NewReader(snap[:cut]))
		_, err := io.Copy(io.Discard, vr)
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrChecksumMismatch) {
			t.Fatalf("cut at %d: err = %v, want ErrTruncated or ErrChecksumMismatch", cut, err)
		}
		if vr.Verified() {
			t.Fatalf("cut at %d: verified", cut)
		}
	}
}

func TestVerifyingReaderSourceError(t *testing.T) {
	snap := fakeSnapshot(200_000)
	boom := errors.New("connection reset")
	vr := NewVerifyingReader(io.MultiReader(bytes.NewReader(snap[:100_000]), iotest.ErrReader(boom)))
	if _, err := io.Copy(io.Discard, vr); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the source's error", err)
	}
}
