package backend

import (
	"context"
	"io"
	"strings"
)

// WithPrefix returns a Backend that stores every key under prefix + "/" in b, so several users
// (clusters, namespaces) can share one bucket. Keys passed to and returned by the wrapper are
// relative to the prefix; List only sees objects under it. Leading and trailing slashes of
// prefix are ignored; an empty prefix returns b unchanged.
func WithPrefix(b Backend, prefix string) Backend {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return b
	}
	return &prefixed{inner: b, prefix: prefix + "/"}
}

type prefixed struct {
	inner  Backend
	prefix string
}

func (p *prefixed) full(key string) string { return p.prefix + key }

// Put implements Backend.
func (p *prefixed) Put(ctx context.Context, key string, r io.Reader) error {
	return p.inner.Put(ctx, p.full(key), r)
}

// Get implements Backend.
func (p *prefixed) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return p.inner.Get(ctx, p.full(key))
}

// GetRange implements Backend.
func (p *prefixed) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return p.inner.GetRange(ctx, p.full(key), offset, length)
}

// Stat implements Backend.
func (p *prefixed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	info, err := p.inner.Stat(ctx, p.full(key))
	info.Key = strings.TrimPrefix(info.Key, p.prefix)
	return info, err
}

// List implements Backend. The inner listing is already sorted, and stripping a common prefix
// keeps the order.
func (p *prefixed) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	infos, err := p.inner.List(ctx, p.full(prefix))
	if err != nil {
		return nil, err
	}
	for i := range infos {
		infos[i].Key = strings.TrimPrefix(infos[i].Key, p.prefix)
	}
	return infos, nil
}

// Delete implements Backend.
func (p *prefixed) Delete(ctx context.Context, key string) error {
	return p.inner.Delete(ctx, p.full(key))
}

// Close implements Backend.
func (p *prefixed) Close() error { return p.inner.Close() }
