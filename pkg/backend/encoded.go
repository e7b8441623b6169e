package backend

import (
	"context"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"

	"github.com/etcd-operator/etcd-operator/pkg/codec"
)

// Encoding says how an Encoded backend writes objects (compressed, encrypted to recipients)
// and which identities it reads encrypted ones with.
type Encoding struct {
	// Write is how Put encodes; the zero value stores plain bytes.
	Write codec.Options
	// Identities decrypt encrypted objects on Get; none: encrypted objects cannot be read.
	Identities []age.Identity
}

// WithEncoding returns a Backend that compresses and encrypts what Put stores as e.Write says,
// and decodes what Get and GetRange return, whatever format each object is in: objects are
// sniffed one by one (pkg/codec), so a prefix may hold plain, compressed and encrypted objects
// side by side, and objects written before an encoding was turned on stay readable.
//
// Put streams (memory bounded by the codec's, not the object's size) and keeps Put's contract:
// an error of r, of the encoding or of ctx leaves no new object. Get fails at once, before any
// byte is returned, for an encrypted object no identity opens (codec.ErrWrongKey,
// codec.ErrNoKey); damage found later surfaces from Read as codec.ErrCorrupt. Stat and List
// report objects as stored: their sizes are the encoded sizes. GetRange decodes from the start
// and skips to offset (an encoded object cannot be entered in the middle).
func WithEncoding(b Backend, e Encoding) Backend {
	return &encoded{inner: b, enc: e}
}

type encoded struct {
	inner Backend
	enc   Encoding
}

// Put implements Backend: r is encoded on a goroutine into a pipe that the inner Put reads.
func (e *encoded) Put(ctx context.Context, key string, r io.Reader) error {
	if e.enc.Write.Format() == (codec.Format{}) {
		return e.inner.Put(ctx, key, r)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- encode(pw, r, e.enc.Write)
	}()
	err := e.inner.Put(ctx, key, pr)
	// The inner Put may return before reading everything (it failed): the encoder's next write
	// fails. It is not waited for then: it may be blocked reading r (a stalled snapshot stream),
	// which the caller closes once Put returned.
	pr.CloseWithError(errPutReturned)
	if err != nil {
		return err
	}
	if encErr := <-done; encErr != nil {
		// The inner Put saw the whole stream yet the encoder failed afterwards: cannot happen
		// with a pipe (the failure is the stream's end), but never report such a Put as stored.
		return fmt.Errorf("encoding %s: %w", key, encErr)
	}
	return nil
}

// errPutReturned ends an encoder whose inner Put has returned.
var errPutReturned = errors.New("upload ended")

// encode copies r through an encoder into pw and closes pw with the outcome, so that the inner
// Put sees r's error (and aborts) or a clean end after the encoder's last bytes.
func encode(pw *io.PipeWriter, r io.Reader, o codec.Options) error {
	w, err := codec.NewWriter(pw, o)
	if err != nil {
		pw.CloseWithError(err)
		return err
	}
	if _, err = io.Copy(w, r); err == nil {
		err = w.Close()
	}
	if err != nil {
		pw.CloseWithError(err)
		return err
	}
	return pw.Close()
}

// Get implements Backend.
func (e *encoded) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := e.inner.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	dec, _, err := codec.NewReader(rc, e.enc.Identities)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return &decoded{ReadCloser: dec, src: rc}, nil
}

// decoded closes the decoder and the object's stream.
type decoded struct {
	io.ReadCloser
	src io.Closer
}

func (d *decoded) Close() error {
	return errors.Join(d.ReadCloser.Close(), d.src.Close())
}

// GetRange implements Backend by decoding from the start.
func (e *encoded) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := ValidateRange(offset, length); err != nil {
		return nil, err
	}
	rc, err := e.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil && !errors.Is(err, io.EOF) {
		rc.Close()
		return nil, fmt.Errorf("reading %s to offset %d: %w", key, offset, err)
	}
	if length < 0 {
		return rc, nil
	}
	return &limited{Reader: io.LimitReader(rc, length), Closer: rc}, nil
}

type limited struct {
	io.Reader
	io.Closer
}

// Stat implements Backend: the object as stored.
func (e *encoded) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return e.inner.Stat(ctx, key)
}

// List implements Backend: the objects as stored.
func (e *encoded) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return e.inner.List(ctx, prefix)
}

// Delete implements Backend.
func (e *encoded) Delete(ctx context.Context, key string) error { return e.inner.Delete(ctx, key) }

// Close implements Backend.
func (e *encoded) Close() error { return e.inner.Close() }
