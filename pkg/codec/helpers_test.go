package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"testing"

	"filippo.io/age"
)

// Test keys, as age-keygen writes them. They protect nothing but test data.
const (
	testKeyFile = `# created: 2026-11-28T01:29:38Z
# public key: age1rv7dvzulnhfsgxs003f97e3ama3p72sp93dmnktd53j3646ywyqqwp6fau
AGE-SECRET-KEY-1JNA3LWWPF2EXA06DAS00Q7PWCVVRM764YGU5Z4M0ALQ68PQH4EVQ6QHH2Y
`
	testRecipient = "age1rv7dvzulnhfsgxs003f97e3ama3p72sp93dmnktd53j3646ywyqqwp6fau"
	otherKeyFile  = `# created: 2026-11-28T01:29:38Z
# public key: age1ppdztgw6lefemf3zlfezucmmm8tk2ucy84ve900rl2pud0t9tczqdxwv4v
AGE-SECRET-KEY-1N75M9QZ9H9S55VP0GAYTAZMKUS7UNR3HSMGY300SLYK24TEECT5QDMLCD7
`
)

// allFormats are the four formats, in String order.
var allFormats = []Format{{}, {Compressed: true}, {Encrypted: true}, {Compressed: true, Encrypted: true}}

// ageChunk is age's plaintext chunk size; an encrypted chunk adds a 16-byte tag.
const (
	ageChunk    = 64 << 10
	ageChunkEnc = ageChunk + 16
)

// mustIdentities parses a key file or fails the test.
func mustIdentities(t testing.TB, keyFile string) []age.Identity {
	t.Helper()
	ids, err := ParseIdentities([]byte(keyFile))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// optionsFor returns Options that write f, encrypting to the test key.
func optionsFor(t testing.TB, f Format) Options {
	t.Helper()
	o := Options{Compress: f.Compressed}
	if f.Encrypted {
		rs, err := ParseRecipients([]byte(testRecipient))
		if err != nil {
			t.Fatal(err)
		}
		o.Recipients = rs
	}
	return o
}

// encode writes data through NewWriter in one Write and returns the stored bytes.
func encode(t testing.TB, data []byte, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeAll reads an object completely through NewReader.
func decodeAll(obj []byte, ids []age.Identity) ([]byte, Format, error) {
	r, f, err := NewReader(bytes.NewReader(obj), ids)
	if err != nil {
		return nil, f, err
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	return out, f, err
}

// mixedReader produces deterministic test data: runs of etcd-like key/value records (which
// compress well) and, when random is set, runs of random bytes (which do not), each run a few
// hundred KiB long.
type mixedReader struct {
	rng    *rand.Rand
	random bool // include incompressible runs
	left   int64
	run    []byte // the rest of the current run
	buf    []byte
	rec    int
}

func newMixedReader(size int64, seed uint64, random bool) *mixedReader {
	return &mixedReader{rng: rand.New(rand.NewPCG(seed, 1)), random: random, left: size, buf: make([]byte, 0, 512<<10)}
}

func (m *mixedReader) Read(p []byte) (int, error) {
	if m.left <= 0 {
		return 0, io.EOF
	}
	if len(m.run) == 0 {
		m.fill()
	}
	n := copy(p, m.run)
	n = int(min(int64(n), m.left))
	m.run = m.run[n:]
	m.left -= int64(n)
	return n, nil
}

// fill makes the next run into buf.
func (m *mixedReader) fill() {
	size := 64<<10 + m.rng.IntN(448<<10)
	b := m.buf[:0]
	if m.random && m.rng.IntN(2) == 0 {
		b = b[:size]
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], m.rng.Uint64())
		}
	} else {
		for len(b) < size {
			m.rec++
			b = fmt.Appendf(b, "/registry/pods/ns-%d/pod-%d\x00{\"kind\":\"Pod\",\"rev\":%d,\"node\":\"node-%d\",\"phase\":\"Running\"}\n",
				m.rec%97, m.rec, m.rec*7, m.rng.IntN(16))
		}
	}
	m.buf = b
	m.run = b
}

// mixedData returns size bytes of mixedReader output.
func mixedData(size int64, seed uint64, random bool) []byte {
	out := make([]byte, size)
	_, _ = io.ReadFull(newMixedReader(size, seed, random), out) // a mixedReader does not fail
	return out
}

// hashingRead reads r to the end in reads of varying odd sizes and returns the sha256 of what
// it read and the error that ended it (nil for io.EOF).
func hashingRead(r io.Reader) ([]byte, int64, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	sizes := []int{1, 17, 4093, 65537, 1<<20 - 1, 333}
	var total int64
	for i := 0; ; i++ {
		n, err := r.Read(buf[:sizes[i%len(sizes)]])
		h.Write(buf[:n])
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return h.Sum(nil), total, nil
		}
		if err != nil {
			return h.Sum(nil), total, err
		}
	}
}

// chunkedWrite writes data to w in writes of varying odd sizes into h as well.
func chunkedWrite(w io.Writer, h hash.Hash, data []byte) error {
	sizes := []int{7, 65535, 1, 1<<20 + 3, 4099, 131073}
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		h.Write(data[:n])
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
