package restoreseed

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Expect is what a backup object must match; zero fields are not checked.
type Expect struct {
	Size   int64
	SHA256 string
}

// Fetched describes an object read by Fetch.
type Fetched struct {
	Size   int64
	SHA256 string
}

// Fetch streams the object key of b into w while checking that it is a complete etcd snapshot
// (etcd's trailing sha256 over the rest matches) and that it matches want. Errors carry a
// reason: BackupNotFound, BackupCorrupt, or StorageUnreachable for a store that failed.
func Fetch(ctx context.Context, b backend.Backend, key string, want Expect, w io.Writer) (Fetched, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		if backend.IsNotFound(err) {
			return Fetched{}, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "backup object %q not found", key)
		}
		if backend.IsPermissionDenied(err) {
			return Fetched{}, reason.Errorf(etcdv1beta2.ReasonInvalidCredentials, "the object store refused the credentials for %q: %w", key, err)
		}
		if why := storage.DecodeReason(err); why != "" {
			return Fetched{}, reason.Errorf(why, "backup object %q: %w%s", key, err, storage.DecodeHint(err))
		}
		return Fetched{}, reason.Errorf(etcdv1beta2.ReasonStorageUnreachable, "reading backup object %q: %w", key, err)
	}
	defer rc.Close()
	vr := snapshot.NewVerifyingReader(rc)
	_, err = io.Copy(errWriter{w}, vr)
	got := Fetched{Size: vr.Size(), SHA256: vr.SHA256()}
	switch {
	case errors.Is(err, snapshot.ErrChecksumMismatch), errors.Is(err, snapshot.ErrTruncated):
		return got, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "backup object %q is not a valid etcd snapshot: %w", key, err)
	case storage.DecodeReason(err) != "":
		return got, reason.Errorf(storage.DecodeReason(err), "backup object %q: %w", key, err)
	case err != nil && ctx.Err() == nil && !isWriteError(err):
		return got, reason.Errorf(etcdv1beta2.ReasonStorageUnreachable, "reading backup object %q: %w", key, err)
	case err != nil:
		return got, fmt.Errorf("copying backup object %q: %w", key, err)
	}
	if want.Size > 0 && got.Size != want.Size {
		return got, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "backup object %q has %d bytes, the backup recorded %d", key, got.Size, want.Size)
	}
	if want.SHA256 != "" && got.SHA256 != want.SHA256 {
		return got, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "backup object %q has sha256 %s, the backup recorded %s", key, got.SHA256, want.SHA256)
	}
	return got, nil
}

// writeError marks errors of the destination writer, so they are not blamed on the store.
type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

func isWriteError(err error) bool {
	_, ok := errors.AsType[writeError](err)
	return ok
}

// errWriter wraps w's errors in writeError.
type errWriter struct{ w io.Writer }

func (e errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		err = writeError{err}
	}
	return n, err
}
