package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// UploadReader wraps the reader given to Put. Providers hand it to their SDK instead of the
// caller's reader: it stops with ctx's error as soon as ctx is done, and it remembers the first
// read error so that Cause can return it even when the SDK reports its own error instead.
// It deliberately hides io.Seeker and io.ReaderAt, so every SDK takes its streaming path.
type UploadReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
	err error
}

// NewUploadReader wraps r for an upload under ctx.
func NewUploadReader(ctx context.Context, r io.Reader) *UploadReader {
	return &UploadReader{ctx: ctx, r: r}
}

// Read implements io.Reader.
func (u *UploadReader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	if err := u.ctx.Err(); err != nil {
		u.err = err
		return 0, err
	}
	n, err := u.r.Read(p)
	u.n += int64(n)
	if err != nil && err != io.EOF {
		u.err = err
	}
	return n, err
}

// N returns the number of bytes read so far.
func (u *UploadReader) N() int64 { return u.n }

// Cause returns err, joined with the reader's error or the context's error when err does not
// wrap them already, so callers of Put can match either with errors.Is. It returns nil when err
// is nil.
func (u *UploadReader) Cause(err error) error {
	if err == nil {
		return nil
	}
	for _, cause := range []error{u.err, u.ctx.Err()} {
		if cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	return err
}
