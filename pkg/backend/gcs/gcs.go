// Package gcs is a backend.Backend on Google Cloud Storage (and emulators such as
// fake-gcs-server), built on cloud.google.com/go/storage with resumable uploads.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/api/googleapi"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// DefaultChunkSize is the resumable upload chunk size when Config.ChunkSize is 0 (the storage
// library's own default). A Put holds one chunk in memory.
const DefaultChunkSize = 16 << 20

// Config configures the GCS provider.
type Config struct {
	// Bucket is the bucket name.
	Bucket string
	// Endpoint overrides the JSON API endpoint, e.g. "http://127.0.0.1:4443/storage/v1/" for
	// fake-gcs-server. Objects are then also read through the JSON API, which emulators serve
	// on the same address.
	Endpoint string
	// Credentials come from a gcpSecret. Nil uses Application Default Credentials (the
	// GOOGLE_APPLICATION_CREDENTIALS file, workload identity, the metadata server), unless
	// Anonymous is set.
	Credentials *Credentials
	// Anonymous sends requests without authentication, for emulators.
	Anonymous bool
	// ChunkSize is the resumable upload chunk size in bytes, rounded up by the library to a
	// multiple of 256 KiB; 0 means DefaultChunkSize.
	ChunkSize int
	// ListPageSize is the number of objects per listing request; 0 means the server's (1000).
	ListPageSize int
	// CABundle is PEM certificates trusted on top of the system's roots for HTTPS, for an
	// endpoint behind a private CA; nil trusts the system's roots only.
	CABundle []byte
}

func (c *Config) validate() error {
	if c.Bucket == "" {
		return errors.New("gcs: Bucket is required")
	}
	if c.ChunkSize < 0 || c.ListPageSize < 0 {
		return errors.New("gcs: ChunkSize and ListPageSize must not be negative")
	}
	if c.Anonymous && c.Credentials != nil {
		return errors.New("gcs: Anonymous and Credentials are mutually exclusive")
	}
	if c.Credentials != nil {
		return c.Credentials.validate()
	}
	return nil
}

// MemoryBound returns the most upload buffer memory a Put holds: one chunk.
func (c *Config) MemoryBound() int64 {
	if c.ChunkSize == 0 {
		return DefaultChunkSize
	}
	return int64(c.ChunkSize)
}

// Backend stores objects in one GCS bucket.
type Backend struct {
	cfg    Config
	client *storage.Client
	bucket *storage.BucketHandle
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend for cfg. It makes no request: a missing bucket or bad credentials show
// up on first use. Close releases the client.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	var opts, auth []option.ClientOption
	if cfg.Endpoint != "" {
		// The XML API the library reads through by default lives on another host; emulators
		// serve reads on the JSON endpoint.
		opts = append(opts, option.WithEndpoint(cfg.Endpoint), storage.WithJSONReads())
	}
	switch {
	case cfg.Anonymous:
		auth = append(auth, option.WithoutAuthentication())
	case cfg.Credentials != nil:
		auth = append(auth, cfg.Credentials.clientOption())
	}
	if len(cfg.CABundle) > 0 {
		// The library takes no root CAs; an HTTP client replaces its transport, so the
		// authenticating transport is built here on a base that trusts the bundle.
		hc, err := httpClient(ctx, cfg.CABundle, auth)
		if err != nil {
			return nil, err
		}
		auth = []option.ClientOption{option.WithHTTPClient(hc)}
	}
	client, err := storage.NewClient(ctx, append(opts, auth...)...)
	if err != nil {
		return nil, fmt.Errorf("gcs: creating client: %w", err)
	}
	return &Backend{cfg: cfg, client: client, bucket: client.Bucket(cfg.Bucket)}, nil
}

// notFound marks a missing object with backend.ErrNotFound and refused credentials with
// backend.ErrPermissionDenied.
func classify(err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("%w: %w", backend.ErrNotFound, err)
	}
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		return backend.MarkStatus(err, ge.Code)
	}
	return err
}

// Put implements backend.Backend with a resumable upload. The object is only created when the
// writer is closed after the last byte; on any error the writer's context is cancelled first,
// so the upload session is abandoned and nothing is committed.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader) error {
	if err := backend.ValidateKey(key); err != nil {
		return fmt.Errorf("gcs: putting %q: %w", key, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := b.bucket.Object(key).NewWriter(wctx)
	w.ChunkSize = b.cfg.ChunkSize
	ur := backend.NewUploadReader(ctx, r)
	if _, err := io.Copy(w, ur); err != nil {
		cancel() // before Close: Close on a live context would commit what was written so far
		_ = w.Close()
		return fmt.Errorf("gcs: putting %q in bucket %s: %w", key, b.cfg.Bucket, classify(ur.Cause(err)))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("gcs: putting %q in bucket %s: %w", key, b.cfg.Bucket, classify(ur.Cause(err)))
	}
	return nil
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rd, err := b.bucket.Object(key).NewReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("gcs: getting %q from bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return rd, nil
}

// GetRange implements backend.Backend.
func (b *Backend) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, fmt.Errorf("gcs: getting %q range: %w", key, err)
	}
	rd, err := b.bucket.Object(key).NewRangeReader(ctx, offset, length)
	if err != nil {
		return nil, fmt.Errorf("gcs: getting %q range %d+%d from bucket %s: %w",
			key, offset, length, b.cfg.Bucket, classify(err))
	}
	return rd, nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	attrs, err := b.bucket.Object(key).Attrs(ctx)
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("gcs: stat %q in bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return backend.ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.Updated}, nil
}

// List implements backend.Backend; the iterator follows every page.
func (b *Backend) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return nil, fmt.Errorf("gcs: listing %q: %w", prefix, err)
	}
	it := b.bucket.Objects(ctx, q)
	if b.cfg.ListPageSize > 0 {
		it.PageInfo().MaxSize = b.cfg.ListPageSize
	}
	infos := []backend.ObjectInfo{}
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gcs: listing %q in bucket %s: %w", prefix, b.cfg.Bucket, classify(err))
		}
		infos = append(infos, backend.ObjectInfo{Key: attrs.Name, Size: attrs.Size, ModTime: attrs.Updated})
	}
	backend.SortObjects(infos)
	return infos, nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string) error {
	if err := b.bucket.Object(key).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("gcs: deleting %q from bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return nil
}

// Close implements backend.Backend.
func (b *Backend) Close() error {
	if err := b.client.Close(); err != nil {
		return fmt.Errorf("gcs: closing client: %w", err)
	}
	return nil
}
