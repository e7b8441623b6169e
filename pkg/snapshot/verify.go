package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// TrailerSize is the length of the sha256 etcd appends to every snapshot it streams.
const TrailerSize = sha256.Size

// ErrChecksumMismatch is returned by VerifyingReader when the snapshot's bytes do not hash to the
// checksum etcd appended: the stream was corrupted on its way.
var ErrChecksumMismatch = errors.New("snapshot checksum mismatch")

// ErrTruncated is returned by VerifyingReader when the stream ended before a trailer could
// follow any data: the stream was cut off.
var ErrTruncated = errors.New("snapshot stream truncated")

// readChunk is how much VerifyingReader reads from its source at a time.
const readChunk = 64 << 10

// VerifyingReader passes an etcd snapshot stream through while checking etcd's trailing sha256.
//
// It holds back the last TrailerSize bytes it has seen, hashes everything before them, and at
// the end of the source compares. Only when they match does it release the trailer and return
// io.EOF; otherwise Read returns ErrChecksumMismatch (or ErrTruncated, or the source's error), so
// a backend.Put reading from it aborts the upload and no object becomes visible. The trailer is
// kept in the output, so `etcdutl snapshot restore` can check it again.
//
// It also counts and hashes the whole output (trailer included): SHA256 and Size describe the
// stored object once Read has returned io.EOF. One sha256 serves both: the trailer is emitted
// only after verification, so at that point the running hash covers exactly what etcd's
// checksum covers, and after the trailer it is the stored object's. Memory use is one fixed
// buffer.
type VerifyingReader struct {
	src      io.Reader
	buf      []byte // buf[start:end] is read from src and not yet returned
	start    int
	end      int
	hash     hash.Hash // every byte returned
	size     int64
	srcEOF   bool
	verified bool
	err      error
}

// NewVerifyingReader wraps an etcd snapshot stream.
func NewVerifyingReader(src io.Reader) *VerifyingReader {
	return &VerifyingReader{
		src:  src,
		buf:  make([]byte, TrailerSize+readChunk),
		hash: sha256.New(),
	}
}

// Read implements io.Reader.
func (v *VerifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		pending := v.end - v.start
		if v.verified {
			if pending == 0 {
				return 0, io.EOF
			}
			return v.emit(p, pending), nil
		}
		if pending > TrailerSize {
			return v.emit(p, pending-TrailerSize), nil
		}
		if v.srcEOF {
			if err := v.verify(); err != nil {
				v.err = err
				return 0, err
			}
			v.verified = true
			continue
		}
		if err := v.fill(); err != nil {
			v.err = err
			return 0, err
		}
	}
}

// emit copies up to limit pending bytes into p, hashing them.
func (v *VerifyingReader) emit(p []byte, limit int) int {
	n := copy(p, v.buf[v.start:v.start+min(limit, len(p))])
	v.hash.Write(p[:n])
	v.size += int64(n)
	v.start += n
	return n
}

// fill reads once from the source into the free end of buf, moving the held-back bytes to the
// front first.
func (v *VerifyingReader) fill() error {
	if v.start > 0 {
		v.end = copy(v.buf, v.buf[v.start:v.end])
		v.start = 0
	}
	n, err := v.src.Read(v.buf[v.end:])
	v.end += n
	switch {
	case err == io.EOF:
		v.srcEOF = true
	case err != nil:
		return fmt.Errorf("reading snapshot stream after %d bytes: %w", v.size+int64(v.end), err)
	}
	return nil
}

func (v *VerifyingReader) verify() error {
	pending := v.end - v.start
	if pending < TrailerSize || v.size == 0 {
		return fmt.Errorf("%w: stream ended after %d bytes, without data and checksum", ErrTruncated, v.size+int64(pending))
	}
	want := v.buf[v.start:v.end]
	// Every byte but the trailer has been emitted (and hashed), and nothing after it yet.
	if got := v.hash.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("%w after %d bytes: etcd's trailer says %s, the data hashes to %s",
			ErrChecksumMismatch, v.size, hex.EncodeToString(want), hex.EncodeToString(got))
	}
	return nil
}

// Verified reports whether the trailer matched; it is true once Read has returned io.EOF.
func (v *VerifyingReader) Verified() bool { return v.verified }

// Size is the number of bytes returned so far (the stored object's size after io.EOF).
func (v *VerifyingReader) Size() int64 { return v.size }

// SHA256 is the hex sha256 of the bytes returned so far (the stored object's after io.EOF).
func (v *VerifyingReader) SHA256() string { return hex.EncodeToString(v.hash.Sum(nil)) }
