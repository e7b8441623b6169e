package codec

import (
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
)

// errClosed is returned by Write after Close.
var errClosed = errors.New("codec: write after close")

// encoderOptions are the zstd encoder settings of every compressed object. The default level's
// window is 8 MiB; concurrency 1 encodes on the writing goroutine, one block at a time, so the
// encoder holds about one window and one block whatever the object size. Zero frames are
// written for empty input so that an empty compressed object still says it is compressed.
func encoderOptions() []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true),
		zstd.WithZeroFrames(true),
	}
}

// NewWriter returns a WriteCloser that encodes what is written to it as o says and writes the
// result into dst: zstd first, then age. Close flushes and finishes the zstd frame and the age
// stream; it does not close dst, and the object is incomplete (unreadable if encrypted) until it
// returns nil. With a zero Options the bytes pass through unchanged.
//
// An encrypted writer writes the age header to dst before NewWriter returns.
func NewWriter(dst io.Writer, o Options) (io.WriteCloser, error) {
	w := &writer{w: dst}
	if len(o.Recipients) > 0 {
		aw, err := age.Encrypt(dst, o.Recipients...)
		if err != nil {
			return nil, fmt.Errorf("starting age encryption: %w", err)
		}
		w.w = aw
		w.closers = append(w.closers, aw)
	}
	if o.Compress {
		zw, err := zstd.NewWriter(w.w, encoderOptions()...)
		if err != nil {
			return nil, fmt.Errorf("starting zstd compression: %w", err)
		}
		w.w = zw
		// The compressor is closed first: its last block goes into the encryption.
		w.closers = append([]io.Closer{zw}, w.closers...)
	}
	return w, nil
}

// writer writes into the outermost encoder and closes the encoders innermost first.
type writer struct {
	w       io.Writer
	closers []io.Closer // in the order Close must close them
	closed  bool
}

// Write encodes p. Errors of dst are returned as they are.
func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errClosed
	}
	return w.w.Write(p)
}

// Close finishes every encoding layer in order; a second Close does nothing.
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	for _, c := range w.closers {
		if err := c.Close(); err != nil {
			return fmt.Errorf("finishing encoded object: %w", err)
		}
	}
	return nil
}
