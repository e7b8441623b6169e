package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// Modifications FuzzVerifyingReader applies to a valid snapshot.
const (
	opNone     = iota // the valid snapshot itself
	opFlip            // xor one byte with a non-zero mask
	opTruncate        // cut it short
	opAppend          // bytes after the trailer
	opRaw             // the body as given, no trailer added: random bytes
	opCount
)

// trailerValid is the reference check: at least one byte of data followed by its sha256.
func trailerValid(b []byte) bool {
	if len(b) <= TrailerSize {
		return false
	}
	sum := sha256.Sum256(b[:len(b)-TrailerSize])
	return bytes.Equal(sum[:], b[len(b)-TrailerSize:])
}

// chunkReader returns src in reads whose sizes cycle through sizes (each 1..256 bytes, times
// scale), with io.EOF together with the last data when eofWithData is set, as io.Reader allows.
type chunkReader struct {
	src         []byte
	sizes       []byte
	scale       int
	i           int
	eofWithData bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.src) == 0 {
		return 0, io.EOF
	}
	n := len(r.src)
	if len(r.sizes) > 0 {
		n = (int(r.sizes[r.i%len(r.sizes)]) + 1) * r.scale
		r.i++
	}
	n = copy(p, r.src[:min(n, len(r.src))])
	r.src = r.src[n:]
	if r.eofWithData && len(r.src) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// FuzzVerifyingReader: for random bytes and for valid snapshots that were flipped, truncated or
// extended, read in any chunking, the reader succeeds exactly when the reference check says
// the trailer matches; then it returns the input unchanged with its size and sha256, and
// otherwise it fails with ErrChecksumMismatch or ErrTruncated, is not Verified, and has never
// released the held-back trailer.
func FuzzVerifyingReader(f *testing.F) {
	for _, n := range []int{1, 31, 32, 33, 1000} {
		body := make([]byte, n)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(body)
		for op := range byte(opCount) {
			f.Add(body, uint32(0), op, uint32(n/2), byte(1), []byte{99, 0, 7})
		}
	}
	// Past one read chunk (readChunk), flipped in the trailer and cut in the data.
	f.Add([]byte{}, uint32(readChunk+33), byte(opFlip), uint32(readChunk+40), byte(0x80), []byte{255})
	f.Add([]byte{}, uint32(2*readChunk+7), byte(opTruncate), uint32(100_000), byte(0), []byte{})
	f.Add([]byte{}, uint32(0), byte(opRaw), uint32(0), byte(0), []byte{}) // empty stream
	f.Fuzz(func(t *testing.T, body []byte, extra uint32, op byte, pos uint32, mask byte, chunks []byte) {
		// extra grows the body with pseudo-random bytes, so that inputs span several reads
		// without the fuzzer having to mutate 64 KiB inputs.
		if extra %= 2*readChunk + 64; extra > 0 {
			grown := make([]byte, int(extra))
			_, _ = rand.NewChaCha8([32]byte{byte(extra)}).Read(grown)
			body = append(body[:len(body):len(body)], grown...)
		}
		sum := sha256.Sum256(body)
		valid := append(body[:len(body):len(body)], sum[:]...)
		in := valid
		switch op % opCount {
		case opFlip:
			in = bytes.Clone(valid)
			in[int(pos)%len(in)] ^= max(mask, 1)
		case opTruncate:
			in = valid[:int(pos)%len(valid)]
		case opAppend:
			in = append(bytes.Clone(valid), max(mask, 1))
		case opRaw:
			in = body
		}
		want := trailerValid(in)
		if op%opCount == opNone && len(body) > 0 && !want {
			t.Fatal("reference check rejects a valid snapshot")
		}

		// Reads of a few bytes on both sides exercise partial fills and emits; they grow with
		// the input so that one run stays within milliseconds.
		scale := 1 + len(in)/1024
		vr := NewVerifyingReader(&chunkReader{src: in, sizes: chunks, scale: scale, eofWithData: mask&1 == 1})
		var out bytes.Buffer
		dst := make([]byte, (int(mask)+1)*scale)
		_, err := io.CopyBuffer(&out, struct{ io.Reader }{vr}, dst)
		switch {
		case want && err != nil:
			t.Fatalf("valid stream of %d bytes (op %d) rejected: %v", len(in), op%opCount, err)
		case want && (!bytes.Equal(out.Bytes(), in) || !vr.Verified() || vr.Size() != int64(len(in))):
			t.Fatalf("valid stream: %d of %d bytes out, verified %t, size %d", out.Len(), len(in), vr.Verified(), vr.Size())
		case want && vr.SHA256() != hex.EncodeToString(sha256Of(in)):
			t.Fatalf("valid stream: SHA256() = %s, want the input's", vr.SHA256())
		case !want && err == nil:
			t.Fatalf("modified stream of %d bytes (op %d) passed the verifier", len(in), op%opCount)
		case !want && !errors.Is(err, ErrChecksumMismatch) && !errors.Is(err, ErrTruncated):
			t.Fatalf("modified stream: err = %v, want ErrChecksumMismatch or ErrTruncated", err)
		case !want && (vr.Verified() || out.Len() > max(len(in)-TrailerSize, 0)):
			t.Fatalf("modified stream: verified %t, %d of %d bytes released", vr.Verified(), out.Len(), len(in))
		case !want && !bytes.Equal(out.Bytes(), in[:out.Len()]):
			t.Fatal("modified stream: released bytes differ from the input")
		}
		if !want {
			if n, err2 := vr.Read(make([]byte, 1)); n != 0 || !errors.Is(err2, err) {
				t.Fatalf("error not sticky: Read = %d, %v after %v", n, err2, err)
			}
		}
	})
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
