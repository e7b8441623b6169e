package restoreboot

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Target is the capture target of a pointInTime (nil: none).
func Target(at *etcdv1beta2.PointInTime) capture.Target {
	t := capture.Target{Revision: at.Revision}
	if at.Time != nil {
		// metav1.Time is whole seconds: the target is the end of that second's first instant,
		// as the user wrote it.
		t.Time = at.Time.UTC()
	}
	return t
}

// TakenBefore reports whether the backup whose key says info was taken at or before the point
// at (nil: any): its revision at or below a target revision; for a target time, no later than
// it (the key's time is cut to the second, so it counts only when that whole second is not
// after the target).
func TakenBefore(info snapshot.KeyInfo, at *etcdv1beta2.PointInTime) bool {
	switch {
	case at == nil:
		return true
	case at.Revision > 0:
		return info.Revision > 0 && info.Revision <= at.Revision
	case at.Time != nil:
		return !info.Time.Add(time.Second).After(at.Time.UTC())
	}
	return true
}

// ResolvePoint finds the revision that replaying the capture stored next to the backup at key
// (its prefix and cluster identity) onto it reaches for at; base is the backup's revision, as
// its key or its source records it. The capture's segments are read and verified, not applied
// (pkg/capture.Resolve). A backup without a cluster identity in its key, or a target the
// capture does not hold, is NotCaptured.
func ResolvePoint(ctx context.Context, b backend.Backend, key string, base int64, at *etcdv1beta2.PointInTime) (*etcdv1beta2.RestoredPoint, error) {
	prefix, info, ok := snapshot.SplitKey(key)
	if !ok || !info.Tagged() {
		return nil, reason.Errorf(etcdv1beta2.ReasonNotCaptured, "backup %s has no cluster identity in its key: no capture can be matched to it", key)
	}
	if base <= 0 {
		base = info.Revision
	}
	if at.Time != nil && !TakenBefore(info, at) {
		return nil, reason.Errorf(etcdv1beta2.ReasonNotCaptured, "backup %s was taken at %s, not before the point in time %s: restore an older backup", key, info.Time.Format(time.RFC3339), at.Time.UTC().Format(time.RFC3339))
	}
	got, err := capture.Resolve(ctx, b, prefix, info.Identity, base, Target(at))
	if err != nil {
		switch why := storage.DecodeReason(err); {
		case why == etcdv1beta2.ReasonDecryptionFailed:
			return nil, reason.Errorf(why, "reading the capture after %s: %w%s", key, err, storage.DecodeHint(err))
		case why != "" || errors.Is(err, capture.ErrNotCaptured) || errors.Is(err, capture.ErrCorrupt):
			return nil, reason.Errorf(etcdv1beta2.ReasonNotCaptured, "%w", err)
		}
		return nil, reason.Errorf(etcdv1beta2.ReasonStorageUnreachable, "reading the capture after %s: %w", key, err)
	}
	pt := &etcdv1beta2.RestoredPoint{Revision: got.Revision, Revisions: got.Revisions, Exact: got.Exact}
	if !got.Time.IsZero() {
		t := metav1.NewTime(got.Time)
		pt.Time = &t
	}
	return pt, nil
}
