// Package backend defines the storage interface the backup and restore operators write snapshots
// through, plus decorators (key prefix, Prometheus metrics) that work with every provider.
//
// Providers live in their own packages (s3, gcs, abs, local, memory) and the factory package
// builds one from a small typed config. This package imports no cloud SDK.
//
// The shape follows thanos-io/objstore: context first, streaming in and out, and a contract
// written down here that backendtest.AcceptanceTest checks against every provider.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrNotFound is wrapped by every error a provider returns for a key that does not exist.
// Test for it with IsNotFound or errors.Is.
var ErrNotFound = errors.New("object not found")

// IsNotFound reports whether err means that the requested object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrPermissionDenied is wrapped by every error a provider returns when the store refused the
// credentials or their permissions (HTTP 401 or 403). Test for it with IsPermissionDenied.
var ErrPermissionDenied = errors.New("permission denied by the object store")

// IsPermissionDenied reports whether err means that the store refused the credentials.
func IsPermissionDenied(err error) bool { return errors.Is(err, ErrPermissionDenied) }

// MarkStatus wraps err with ErrPermissionDenied when status is 401 or 403: the providers call
// it with the HTTP status of their SDK's error type.
func MarkStatus(err error, status int) error {
	if status == 401 || status == 403 {
		return fmt.Errorf("%w: %w", ErrPermissionDenied, err)
	}
	return err
}

// MaxKeyLen is the longest key accepted, in bytes (the S3 and GCS limit).
const MaxKeyLen = 1024

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	// Key is the object's full key, relative to the backend's root.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// ModTime is when the object was last written, as the store reports it (S3 rounds to seconds).
	ModTime time.Time
}

// Backend is a flat key/value store of immutable objects, such as a bucket.
//
// Keys are non-empty UTF-8 strings of at most MaxKeyLen bytes; "/" is an ordinary character
// that by convention separates path segments (the local provider maps it to directories and so
// rejects empty, "." and ".." segments).
//
// All methods are safe for concurrent use. Errors are wrapped once with the operation and the
// key; a missing object is reported with an error for which IsNotFound returns true.
type Backend interface {
	// Put stores everything read from r under key, replacing any existing object (so Put is
	// idempotent: retrying it with the same data leaves the same object).
	//
	// The size of r is not known in advance: providers upload in parts (S3 multipart, GCS
	// resumable chunks, Azure blocks) and hold at most part size x concurrency bytes in memory,
	// never the whole object.
	//
	// An upload is all-or-nothing. If r returns an error other than io.EOF, or ctx is cancelled,
	// before Put returns, Put returns an error (wrapping r's error or ctx's) and no new object
	// becomes visible under key: the provider aborts the multipart upload, leaves blocks
	// uncommitted or abandons the resumable session. An object that existed before stays as it
	// was. When Put returns nil the object is complete and readable.
	Put(ctx context.Context, key string, r io.Reader) error

	// Get returns a stream of the object's content. The caller must close it. Errors while
	// reading are returned by Read; a missing key fails Get itself.
	Get(ctx context.Context, key string) (io.ReadCloser, error)

	// GetRange returns length bytes of the object starting at offset; length -1 reads to the
	// end. A range that extends past the end is cut at the end. offset must be in [0, size)
	// and length positive or -1; ValidateRange checks the arguments.
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// Stat returns the object's size and modification time.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// List returns every object whose key starts with prefix (all pages, however many), sorted
	// by key in byte-wise lexicographic order. No match is an empty list and a nil error.
	// Uploads in progress or aborted are never listed.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)

	// Delete removes the object. Deleting a missing key succeeds (Delete is idempotent).
	Delete(ctx context.Context, key string) error

	// Close releases the provider's clients. The Backend must not be used afterwards.
	Close() error
}

// ValidateKey checks the rules every provider applies to keys.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("key longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		return errors.New("key is not valid UTF-8")
	}
	return nil
}

// ValidateRange checks GetRange's offset and length arguments.
func ValidateRange(offset, length int64) error {
	if offset < 0 {
		return fmt.Errorf("negative range offset %d", offset)
	}
	if length == 0 || length < -1 {
		return fmt.Errorf("invalid range length %d: want > 0, or -1 for the rest", length)
	}
	return nil
}

// SortObjects sorts infos by key in byte-wise order, the order List promises.
func SortObjects(infos []ObjectInfo) {
	slices.SortFunc(infos, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
}
