package restoreseed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Replayed is what a point-in-time restore replayed onto the backup.
type Replayed struct {
	// Revision is the revision the data was brought to, and Time when the capture received it
	// (RFC 3339, empty when nothing was replayed).
	Revision int64  `json:"revision"`
	Time     string `json:"time,omitempty"`
	// Revisions and Events are how many were replayed; Leases how many leases were written
	// back for keys put after the backup.
	Revisions int64 `json:"revisions"`
	Events    int64 `json:"events,omitempty"`
	Leases    int   `json:"leases,omitempty"`
	// Exact reports that the capture went past the target: the data is the keyspace at the
	// target, not only the newest revision captured before it.
	Exact bool `json:"exact,omitempty"`
}

// replay brings the downloaded snapshot at snap (size bytes, verified) to target with the
// capture stored next to the backup: the backup key's prefix and cluster identity. It cuts
// etcd's trailer off first: the file is then a bbolt file that the replay writes into.
func replay(ctx context.Context, b backend.Backend, key, snap string, size int64, target capture.Target) (*Replayed, error) {
	prefix, info, ok := snapshot.SplitKey(key)
	if !ok || !info.Tagged() {
		return nil, reason.Errorf(etcdv1beta2.ReasonNotCaptured, "backup %s has no cluster identity in its key: no capture can be matched to it", key)
	}
	if hasTrailer(size) {
		if err := os.Truncate(snap, size-snapshot.TrailerSize); err != nil {
			return nil, fmt.Errorf("cutting the checksum off %s: %w", snap, err)
		}
	}
	rep, err := capture.Replay(ctx, b, prefix, info.Identity, snap, target, capture.ReplayOptions{})
	if err != nil {
		switch why := storage.DecodeReason(err); {
		case why == etcdv1beta2.ReasonDecryptionFailed:
			return nil, reason.Errorf(why, "reading the capture: %w%s", err, storage.DecodeHint(err))
		case why != "" || errors.Is(err, capture.ErrNotCaptured) || errors.Is(err, capture.ErrCorrupt) || errors.Is(err, capture.ErrInconsistent):
			return nil, reason.Errorf(etcdv1beta2.ReasonNotCaptured, "%w", err)
		}
		return nil, err
	}
	out := &Replayed{Revision: rep.Revision, Revisions: rep.Revisions, Events: rep.Events, Leases: rep.Leases, Exact: rep.Exact}
	if !rep.Time.IsZero() {
		out.Time = rep.Time.UTC().Format(time.RFC3339Nano)
	}
	return out, nil
}
