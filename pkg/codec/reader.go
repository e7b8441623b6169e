package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
)

// maxDecoderWindow is the largest zstd window a reader accepts. Our writer uses at most 8 MiB
// and the zstd command's default levels no more; a frame asking for more (zstd --long, or a
// hostile object) is refused instead of making the decoder allocate it.
const maxDecoderWindow = 64 << 20

// errReaderClosed is returned by Read after Close.
var errReaderClosed = errors.New("codec: read after close")

// decoderOptions are the zstd decoder settings: decode on the reading goroutine, keep few
// buffers, and bound the window a frame may ask for.
func decoderOptions() []zstd.DOption {
	return []zstd.DOption{
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxDecoderWindow),
		zstd.WithDecoderMaxMemory(maxDecoderWindow),
	}
}

// NewReader sniffs the object read from src and returns its decoded plaintext and the format
// found. Plain objects pass through byte for byte.
//
// An encrypted object needs one of ids: with none NewReader returns an error wrapping ErrNoKey,
// with none matching one wrapping ErrWrongKey (and the *age.NoIdentityMatchError), in both cases
// before any plaintext is returned. A damaged age header is an error wrapping ErrCorrupt.
// NewReader reads the first SniffLen bytes of src and, for an encrypted object, the age header
// and the first chunk (to tell whether the plaintext inside is compressed).
//
// Failures later in the stream surface from Read as errors wrapping ErrCorrupt: age
// authenticates every 64 KiB chunk and the end of the stream, so tampering and truncation are
// detected, never returned as plaintext followed by a clean io.EOF; zstd checks its frames and
// their checksums. Errors reading src itself are returned as src returned them.
//
// Close releases the zstd decoder; it does not close src.
func NewReader(src io.Reader, ids []age.Identity) (io.ReadCloser, Format, error) {
	in := &recorder{r: src}
	prefix := make([]byte, SniffLen)
	n, err := io.ReadFull(in, prefix)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, Format{}, err
	}
	prefix = prefix[:n]
	format := Sniff(prefix)
	r := &reader{src: in}
	body := io.MultiReader(bytes.NewReader(prefix), in)

	if format.Encrypted {
		if len(ids) == 0 {
			return nil, format, ErrNoKey
		}
		plain, err := age.Decrypt(body, ids...)
		if err != nil {
			return nil, format, headerError(in, err)
		}
		r.inner = &recorder{r: plain}
		// Whether the plaintext is compressed is only visible inside the encryption.
		magic := make([]byte, len(zstdMagic))
		n, err := io.ReadFull(r.inner, magic)
		if err != nil && (r.inner.err != nil || r.src.err != nil) {
			return nil, format, r.fail(err)
		}
		format.Compressed = bytes.Equal(magic[:n], zstdMagic)
		body = io.MultiReader(bytes.NewReader(magic[:n]), r.inner)
	}

	if format.Compressed {
		dec, err := zstd.NewReader(body, decoderOptions()...)
		if err != nil {
			return nil, format, fmt.Errorf("starting zstd decompression: %w", err)
		}
		r.dec = dec
		body = dec
	}
	r.r = body
	return r, format, nil
}

// headerError classifies an error age.Decrypt returned for the header.
func headerError(src *recorder, err error) error {
	var noMatch *age.NoIdentityMatchError
	switch {
	case src.err != nil:
		return src.err
	case errors.As(err, &noMatch):
		return fmt.Errorf("%w: %w", ErrWrongKey, err)
	default:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
}

// recorder remembers the first error other than io.EOF its reader returned. The decoders do not
// all pass errors up as they got them (zstd reports an age stream cut at a frame boundary as a
// clean end), so the reader asks the recorders what really happened.
type recorder struct {
	r   io.Reader
	err error
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// reader is the decoded stream NewReader returns.
type reader struct {
	r     io.Reader     // the outermost decoder (or the source, for plain objects)
	src   *recorder     // the source
	inner *recorder     // the age plaintext, for encrypted objects
	dec   *zstd.Decoder // the zstd decoder, for compressed objects
	err   error         // sticky: the first error returned
}

// Read returns decoded bytes. Once it has returned an error (io.EOF included) it returns the
// same error again.
func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(p)
	if err != nil {
		err = r.fail(err)
		r.err = err
	}
	return n, err
}

// fail classifies an error a decoder returned: the source's own error as it was, a clean end
// as io.EOF unless a layer below saw something else, and anything else as ErrCorrupt.
func (r *reader) fail(err error) error {
	switch {
	case r.src.err != nil:
		return r.src.err
	case r.inner != nil && r.inner.err != nil:
		return fmt.Errorf("%w: %w", ErrCorrupt, r.inner.err)
	case err == io.EOF: //nolint:errorlint // io.EOF is returned unwrapped by contract
		return io.EOF
	default:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
}

// Close releases the zstd decoder. Reads after Close fail.
func (r *reader) Close() error {
	if r.dec != nil {
		r.dec.Close()
		r.dec = nil
	}
	r.err = errReaderClosed
	return nil
}
