// Package memory is an in-memory backend.Backend for tests and for examples. Unlike the real
// providers it holds every object, and each upload while it is read, in memory.
package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// Backend stores objects in a map. The zero value is not usable; call New.
type Backend struct {
	mu      sync.RWMutex
	objects map[string]object
	now     func() time.Time
}

type object struct {
	data    []byte
	modTime time.Time
}

var _ backend.Backend = (*Backend)(nil)

// New returns an empty in-memory backend.
func New() *Backend {
	return &Backend{objects: map[string]object{}, now: time.Now}
}

// Put implements backend.Backend. The object appears only once r is read to the end without
// error and ctx is still live.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader) error {
	if err := backend.ValidateKey(key); err != nil {
		return fmt.Errorf("memory: putting %q: %w", key, err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, ctxReader{ctx: ctx, r: r}); err != nil {
		return fmt.Errorf("memory: putting %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: putting %q: %w", key, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[key] = object{data: buf.Bytes(), modTime: b.now()}
	return nil
}

func (b *Backend) lookup(key string) (object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	o, ok := b.objects[key]
	if !ok {
		return object{}, backend.ErrNotFound
	}
	return o, nil
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	o, err := b.lookup(key)
	if err != nil {
		return nil, fmt.Errorf("memory: getting %q: %w", key, err)
	}
	// Objects are never modified in place, so sharing the slice is safe.
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

// GetRange implements backend.Backend.
func (b *Backend) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, fmt.Errorf("memory: getting %q range: %w", key, err)
	}
	o, err := b.lookup(key)
	if err != nil {
		return nil, fmt.Errorf("memory: getting %q range: %w", key, err)
	}
	size := int64(len(o.data))
	if offset >= size {
		return nil, fmt.Errorf("memory: getting %q range: offset %d not below size %d", key, offset, size)
	}
	end := size
	if length > 0 && offset+length < size {
		end = offset + length
	}
	return io.NopCloser(bytes.NewReader(o.data[offset:end])), nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	o, err := b.lookup(key)
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("memory: stat %q: %w", key, err)
	}
	return backend.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// List implements backend.Backend.
func (b *Backend) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	b.mu.RLock()
	infos := []backend.ObjectInfo{}
	for k, o := range b.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, backend.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	b.mu.RUnlock()
	backend.SortObjects(infos)
	return infos, nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

// Close implements backend.Backend; the objects stay readable.
func (b *Backend) Close() error { return nil }

// ctxReader fails reads once ctx is done, so a cancelled upload stops early.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
