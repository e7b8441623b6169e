package snapshot

import (
	"errors"
	"io"
	"sync"
)

// Read-ahead between the snapshot stream and the upload: readAheadChunks buffers of
// readAheadChunkSize bytes, so at most 4 MiB are held on top of the backend's part buffers,
// whatever the database size.
const (
	readAheadChunks    = 4
	readAheadChunkSize = 1 << 20
)

// readAhead reads its source (the VerifyingReader over etcd's stream) in a goroutine of its
// own into a few fixed buffers. Receiving and verifying the stream then overlaps with the
// backend filling and sending its parts, instead of alternating with it on one goroutine: the
// backup runs at the speed of the slower side, not of their sum.
//
// Read returns the source's bytes in order and then the source's final error (io.EOF only
// when the VerifyingReader verified the trailer). It is not safe for concurrent Reads. Close
// stops the goroutine once its current source read returns: close the source as well to
// interrupt a read that is blocked.
type readAhead struct {
	full chan chunk  // filled buffers, in stream order
	free chan []byte // buffers to fill
	done chan struct{}
	stop sync.Once
	wg   sync.WaitGroup

	cur chunk // the chunk Read is returning
	eof bool  // Read has returned io.EOF
}

type chunk struct {
	buf []byte
	n   int   // buf[:n] holds data
	off int   // buf[off:n] is not returned yet
	err error // the source's error after buf[:n] (io.EOF at the end)
}

func newReadAhead(src io.Reader) *readAhead {
	r := &readAhead{
		full: make(chan chunk, readAheadChunks),
		free: make(chan []byte, readAheadChunks),
		done: make(chan struct{}),
	}
	for range readAheadChunks {
		r.free <- make([]byte, readAheadChunkSize)
	}
	r.wg.Go(func() { r.fill(src) })
	return r
}

// fill is the goroutine: it fills free buffers from src until src fails or ends, or Close.
func (r *readAhead) fill(src io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.done:
			return
		}
		n, err := io.ReadFull(src, buf)
		if errors.Is(err, io.ErrUnexpectedEOF) { // a short last chunk: the stream ended
			err = io.EOF
		}
		select {
		case r.full <- chunk{buf: buf, n: n, err: err}:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements io.Reader.
func (r *readAhead) Read(p []byte) (int, error) {
	for r.cur.off >= r.cur.n {
		if r.cur.err != nil {
			// io.Reader ends with io.EOF itself; anything wrapping it is a failure, not the end.
			r.eof = r.cur.err == io.EOF //nolint:errorlint // see above
			return 0, r.cur.err
		}
		if r.cur.buf != nil {
			r.free <- r.cur.buf // never blocks: free has room for every buffer
		}
		r.cur = <-r.full
	}
	n := copy(p, r.cur.buf[r.cur.off:r.cur.n])
	r.cur.off += n
	return n, nil
}

// EOF reports whether Read has returned io.EOF: the whole stream was read and verified. The
// source's counters may be read once it is true (the goroutine wrote them before handing over
// the last chunk).
func (r *readAhead) EOF() bool { return r.eof }

// Close stops the goroutine and waits for it; the source must be closed first (or at the same
// time) when a read of it may be blocked.
func (r *readAhead) Close() {
	r.stop.Do(func() { close(r.done) })
	r.wg.Wait()
}
