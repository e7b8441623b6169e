package snapshot

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// TestReadAheadPassesTheStream: every byte in order and then io.EOF, for sizes around the
// chunk size and beyond the number of buffers (so each is reused), with any read size.
func TestReadAheadPassesTheStream(t *testing.T) {
	for _, n := range []int{0, 1, readAheadChunkSize - 1, readAheadChunkSize, readAheadChunkSize + 1, (readAheadChunks+2)*readAheadChunkSize + 7} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		r := newReadAhead(iotest.HalfReader(bytes.NewReader(data)))
		var out bytes.Buffer
		if _, err := io.CopyBuffer(&out, struct{ io.Reader }{r}, make([]byte, 1000)); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !bytes.Equal(out.Bytes(), data) || !r.EOF() {
			t.Fatalf("n=%d: %d bytes out, EOF %t", n, out.Len(), r.EOF())
		}
		r.Close()
	}
}

// TestReadAheadPassesTheError: the bytes before a source error, then the error itself (a
// checksum mismatch must reach the backend so that it aborts the upload), and EOF is false.
func TestReadAheadPassesTheError(t *testing.T) {
	data := bytes.Repeat([]byte("x"), readAheadChunkSize+10)
	src := io.MultiReader(bytes.NewReader(data), iotest.ErrReader(ErrChecksumMismatch))
	r := newReadAhead(src)
	defer r.Close()
	got, err := io.ReadAll(r)
	if !errors.Is(err, ErrChecksumMismatch) || len(got) != len(data) || r.EOF() {
		t.Fatalf("read %d bytes, err %v, EOF %t; want %d bytes and the checksum error", len(got), err, r.EOF(), len(data))
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("the error must be sticky, got %v", err)
	}
}

// countingReader is an endless source that counts what was read from it.
type countingReader struct{ n atomic.Int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// TestReadAheadBoundsMemory: with nobody reading, the goroutine reads at most its buffers' worth
// ahead, and Close stops it.
func TestReadAheadBoundsMemory(t *testing.T) {
	src := &countingReader{}
	r := newReadAhead(src)
	time.Sleep(200 * time.Millisecond) //nolint:forbidigo // proves the goroutine does NOT read further
	if got, limit := src.n.Load(), int64(readAheadChunks*readAheadChunkSize); got > limit {
		t.Fatalf("read %d bytes ahead, more than the %d its buffers hold", got, limit)
	}
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not stop the goroutine")
	}
}

// TestReadAheadCloseInterruptsABlockedRead: closing the source (as TakeFrom does with etcd's
// stream) and then the read-ahead returns even though a source read was blocked.
func TestReadAheadCloseInterruptsABlockedRead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	r := newReadAhead(pr)
	done := make(chan struct{})
	go func() { _ = pr.Close(); r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a blocked source read")
	}
}
