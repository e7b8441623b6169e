package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
)

// payloadStart returns where the first age chunk of an encrypted object starts (after the
// header and the 16-byte nonce), given the length of its plaintext.
func payloadStart(obj []byte, plaintext int) int {
	chunks := max(1, (plaintext+ageChunk-1)/ageChunk)
	return len(obj) - plaintext - 16*chunks
}

// wantCorrupt fails the test unless reading obj ends in an error wrapping ErrCorrupt.
func wantCorrupt(t *testing.T, obj []byte, ids []age.Identity, what string) {
	t.Helper()
	n, err := readErr(obj, ids)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: read %d bytes, then err %v; want ErrCorrupt", what, n, err)
		return
	}
	if errors.Is(err, ErrWrongKey) || errors.Is(err, ErrNoKey) {
		t.Errorf("%s: %v also matches a key error", what, err)
	}
}

// TestTruncatedEncrypted cuts encrypted objects in the header, in the nonce, mid-chunk and
// exactly at chunk boundaries: every cut is an error wrapping ErrCorrupt, never a clean end.
func TestTruncatedEncrypted(t *testing.T) {
	ids := mustIdentities(t, testKeyFile)
	data := mixedData(4*ageChunk+1000, 3, true) // five chunks, the last one short
	for _, f := range allFormats[2:] {
		t.Run(f.String(), func(t *testing.T) {
			obj := encode(t, data, optionsFor(t, f))
			// The plaintext inside the encryption: for zstd+age the compressed stream.
			plain := len(data)
			if f.Compressed {
				plain = len(encode(t, data, Options{Compress: true}))
			}
			start := payloadStart(obj, plain)
			if start <= SniffLen+16 || start >= len(obj) {
				t.Fatalf("payload starts at %d of %d", start, len(obj))
			}
			cuts := map[string]int{
				"mid-header":         SniffLen + 5,
				"before the nonce":   start - 16,
				"mid-nonce":          start - 7,
				"after the nonce":    start,
				"mid-chunk 1":        start + 1000,
				"chunk boundary 1":   start + ageChunkEnc,
				"chunk boundary 2":   start + 2*ageChunkEnc,
				"in the last chunk":  len(obj) - 1,
				"in the last tag":    len(obj) - 8,
				"mid-chunk 2, early": start + ageChunkEnc + 1,
			}
			for name, cut := range cuts {
				if cut >= len(obj) {
					continue // zstd+age is shorter: fewer chunks
				}
				wantCorrupt(t, obj[:cut], ids, name)
			}
		})
	}
}

// TestTruncatedAtZstdFrameEnd: the decoder takes a stream that ends where a zstd frame ends for a
// complete stream. An age object cut right after a chunk that ends with a complete frame must
// still be reported as cut, from age's own check.
func TestTruncatedAtZstdFrameEnd(t *testing.T) {
	ids := mustIdentities(t, testKeyFile)
	frame := encode(t, mixedData(100<<10, 4, false), Options{Compress: true})
	// A skippable frame pads the first frame out to exactly one age chunk.
	padLen := ageChunk - len(frame) - 8
	if padLen < 0 {
		t.Fatalf("frame of %d bytes does not fit one chunk", len(frame))
	}
	plain := append([]byte{}, frame...)
	plain = binary.LittleEndian.AppendUint32(plain, 0x184D2A50)
	plain = binary.LittleEndian.AppendUint32(plain, uint32(padLen)) //nolint:gosec // padLen < 64 KiB, checked above
	plain = append(plain, make([]byte, padLen)...)
	plain = append(plain, frame...)
	obj := encode(t, plain, optionsFor(t, Format{Encrypted: true}))

	out, f, err := decodeAll(obj, ids)
	if err != nil || f != (Format{Compressed: true, Encrypted: true}) || len(out) != 2*(100<<10) {
		t.Fatalf("whole object: %d bytes, format %v, err %v", len(out), f, err)
	}
	cut := obj[:payloadStart(obj, len(plain))+ageChunkEnc]
	wantCorrupt(t, cut, ids, "cut after the first frame's chunk")
}

// TestTruncatedZstd: a compressed object cut anywhere after its magic is an error.
func TestTruncatedZstd(t *testing.T) {
	obj := encode(t, mixedData(3<<20, 5, true), Options{Compress: true})
	for _, cut := range []int{4, 5, 12, 1000, len(obj) / 3, len(obj) / 2, len(obj) - 5, len(obj) - 1} {
		wantCorrupt(t, obj[:cut], nil, "zstd cut at "+strconv.Itoa(cut))
	}
}

// TestTampered: one flipped byte in the middle of an encrypted object (in a chunk's ciphertext)
// fails authentication, and so does one in the zstd frame of a compressed object (checksum or
// block structure).
func TestTampered(t *testing.T) {
	ids := mustIdentities(t, testKeyFile)
	data := mixedData(1<<20, 6, true)
	for _, f := range allFormats[1:] {
		obj := encode(t, data, optionsFor(t, f))
		for _, at := range []int{len(obj) / 2, len(obj) - 1, len(obj) - 20} {
			bad := bytes.Clone(obj)
			bad[at] ^= 0x40
			if f == (Format{Compressed: true}) && at != len(obj)/2 {
				continue // only the middle for zstd: a flip in its last bytes may be in the checksum only
			}
			wantCorrupt(t, bad, ids, f.String()+" flipped at "+strconv.Itoa(at))
		}
	}
	// Bytes after the end of the age stream are tampering too.
	obj := encode(t, data, optionsFor(t, Format{Encrypted: true}))
	wantCorrupt(t, append(obj, 0), ids, "age with a trailing byte")
}

// TestSourceError: a failing source is reported as itself, not as a corrupt object, in every
// format and whether it fails while NewReader reads the header or later.
func TestSourceError(t *testing.T) {
	ids := mustIdentities(t, testKeyFile)
	boom := errors.New("connection reset by object store")
	data := mixedData(1<<20, 7, true)
	for _, f := range allFormats {
		obj := encode(t, data, optionsFor(t, f))
		for _, at := range []int{0, 10, 100, len(obj) / 2, len(obj) - 1} {
			src := io.MultiReader(bytes.NewReader(obj[:at]), &failingReader{err: boom})
			r, _, err := NewReader(src, ids)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
				r.Close()
			}
			if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
				t.Errorf("%v failing at %d: err %v, want the source's error only", f, at, err)
			}
		}
	}
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

// TestZstdWindowLimit: a zstd frame asking for a window above the decoder's limit (as zstd --long
// or a hostile object does) is refused, without allocating the window.
func TestZstdWindowLimit(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithWindowSize(2*maxDecoderWindow), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(mixedData(1<<20, 8, false)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, buf.Bytes(), nil, "frame with a 128 MiB window")

	// The same frame inside age, written by hand.
	var enc bytes.Buffer
	aw, err := age.Encrypt(&enc, optionsFor(t, Format{Encrypted: true}).Recipients...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, enc.Bytes(), mustIdentities(t, testKeyFile), "age with a 128 MiB window frame inside")
}
