package codec

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"filippo.io/age"
)

// Bounds FuzzNewReader holds NewReader to: it reads at most fuzzMaxOutput plaintext bytes of an
// input (zstd legitimately expands a few bytes into megabytes) and the allocations of one input
// must stay below fuzzMaxAlloc: the largest window the decoder accepts, its block buffers and
// the age header limit, with room to spare, but far below what an unchecked frame header could
// ask for (up to 3.75 TB).
const (
	fuzzMaxOutput = 16 << 20
	fuzzMaxAlloc  = 2*maxDecoderWindow + 32<<20
)

// FuzzNewReader feeds NewReader arbitrary objects (seeded with valid objects of every format and
// cut or damaged versions of them) and checks that it never panics, returns only the documented
// errors, reports the format Sniff sees, passes plain input through unchanged, and allocates a
// bounded amount whatever the input claims.
//
//	go test -run '^$' -fuzz FuzzNewReader -fuzztime 2m ./pkg/codec/
func FuzzNewReader(f *testing.F) {
	ids := mustIdentities(f, testKeyFile)
	for _, format := range allFormats {
		for _, data := range [][]byte{nil, []byte("x"), mixedData(100<<10, 12, true)} {
			obj := encode(f, data, optionsFor(f, format))
			f.Add(obj)
			f.Add(obj[:len(obj)/2])
			if len(obj) > 0 {
				bad := bytes.Clone(obj)
				bad[len(bad)*2/3] ^= 1
				f.Add(bad)
			}
		}
	}
	f.Add(append(bytes.Clone(zstdMagic), 0x00, 0x00)) // a frame header and nothing more
	f.Add(append(bytes.Clone(ageMagic), "-> X25519 \n"...))

	f.Fuzz(func(t *testing.T, obj []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, format, err := readBounded(obj, ids)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > fuzzMaxAlloc {
			t.Errorf("reading a %d-byte object allocated %d MiB", len(obj), grew>>20)
		}

		sniffed := Sniff(obj)
		if format.Encrypted != sniffed.Encrypted || (!sniffed.Encrypted && format.Compressed != sniffed.Compressed) {
			t.Errorf("NewReader format %v, Sniff %v", format, sniffed)
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrCorrupt), errors.Is(err, ErrWrongKey):
		default:
			// The source is a bytes.Reader that does not fail, and ids are given.
			t.Fatalf("undocumented error: %v", err)
		}
		if format == (Format{}) && (err != nil || !bytes.Equal(out, obj)) {
			t.Fatalf("plain object not passed through: err %v", err)
		}
	})
}

// readBounded reads at most fuzzMaxOutput bytes of obj's plaintext.
func readBounded(obj []byte, ids []age.Identity) ([]byte, Format, error) {
	r, format, err := NewReader(bytes.NewReader(obj), ids)
	if err != nil {
		return nil, format, err
	}
	defer r.Close()
	if format == (Format{}) {
		// Plain output is the input itself: keep it to compare.
		out, err := io.ReadAll(r)
		return out, format, err
	}
	_, err = io.Copy(io.Discard, io.LimitReader(r, fuzzMaxOutput))
	return nil, format, err
}
