// Package local is a backend.Backend on a local filesystem directory (a mounted volume, or tests).
//
// A key is a path relative to the directory, "/" separating directories. Uploads are written to
// a temporary file in the destination directory, synced and renamed into place, so readers see
// either the old object or the complete new one, and a failed upload leaves nothing.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// tmpPrefix starts the names of uploads in progress; List skips them and keys may not use it.
const tmpPrefix = ".tmp-upload-"

// Config configures the local provider.
type Config struct {
	// Dir is the root directory; it is created if missing.
	Dir string
}

func (c Config) validate() error {
	if c.Dir == "" {
		return errors.New("local: Dir is required")
	}
	return nil
}

// Backend stores objects as files under a directory.
type Backend struct {
	root string
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend rooted at cfg.Dir, creating the directory if needed.
func New(_ context.Context, cfg Config) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("local: resolving %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("local: creating %q: %w", root, err)
	}
	return &Backend{root: root}, nil
}

// path maps a key to its file, rejecting keys a filesystem cannot hold faithfully.
func (b *Backend) path(key string) (string, error) {
	if err := backend.ValidateKey(key); err != nil {
		return "", err
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return "", fmt.Errorf("key has an empty, \".\" or \"..\" path segment")
		case strings.HasPrefix(seg, tmpPrefix):
			return "", fmt.Errorf("key segment starts with the reserved %q", tmpPrefix)
		case strings.ContainsRune(seg, 0):
			return "", fmt.Errorf("key contains NUL")
		}
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// notFound maps the errors of a missing file, or of a directory where a file should be, to
// backend.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("%w: %w", backend.ErrNotFound, err)
	}
	return err
}

// Put implements backend.Backend: temp file in the same directory, fsync, rename, fsync of the
// directory.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader) error {
	if err := b.put(ctx, key, r); err != nil {
		return fmt.Errorf("local: putting %q: %w", key, err)
	}
	return nil
}

func (b *Backend) put(ctx context.Context, key string, r io.Reader) error {
	path, err := b.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := createTemp(dir)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	ur := backend.NewUploadReader(ctx, r)
	if _, err := io.Copy(f, ur); err != nil {
		return ur.Cause(err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	committed = true
	return syncDir(dir)
}

// createTemp creates the directory and a temporary file in it, retrying when a concurrent
// Delete prunes the directory in between.
func createTemp(dir string) (*os.File, error) {
	var err error
	for range 3 {
		if err = os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
		var f *os.File
		if f, err = os.CreateTemp(dir, tmpPrefix+"*"); err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	f, _, err := b.open(key)
	if err != nil {
		return nil, fmt.Errorf("local: getting %q: %w", key, err)
	}
	return f, nil
}

// GetRange implements backend.Backend.
func (b *Backend) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rc, err := b.getRange(key, offset, length)
	if err != nil {
		return nil, fmt.Errorf("local: getting %q range: %w", key, err)
	}
	return rc, nil
}

func (b *Backend) getRange(key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, err
	}
	f, size, err := b.open(key)
	if err != nil {
		return nil, err
	}
	if offset >= size {
		_ = f.Close()
		return nil, fmt.Errorf("offset %d not below size %d", offset, size)
	}
	if length < 0 {
		length = size - offset
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, offset, length), f}, nil
}

// open opens the file of key and returns its size; a directory counts as missing.
func (b *Backend) open(key string) (*os.File, int64, error) {
	path, err := b.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, notFound(err)
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		err = notFound(syscall.EISDIR)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	f, size, err := b.open(key)
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("local: stat %q: %w", key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("local: stat %q: %w", key, err)
	}
	return backend.ObjectInfo{Key: key, Size: size, ModTime: st.ModTime()}, nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error { return nil }
