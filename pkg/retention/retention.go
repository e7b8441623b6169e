// Package retention decides which backup objects under a prefix to delete and deletes them.
//
// It only ever considers keys that snapshot.ParseKey recognises under the exact prefix (objects
// this project wrote), orders them by the time and revision parsed from the key (never by string
// order), and never deletes the newest backup nor the one the caller protects (the backup just
// written).
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Policy says which backups to keep. Zero fields do not limit.
type Policy struct {
	// MaxBackups keeps at most this many backups, the newest.
	MaxBackups int
	// MaxAge deletes backups taken longer than this ago.
	MaxAge time.Duration
}

// IsZero reports whether the policy keeps everything.
func (p Policy) IsZero() bool { return p.MaxBackups <= 0 && p.MaxAge <= 0 }

// Backup is one of our backup objects.
type Backup struct {
	Key string
	snapshot.KeyInfo
}

// Parse returns the backups among infos written under prefix, newest first (by time, then
// revision). Other objects are left out.
func Parse(prefix string, infos []backend.ObjectInfo) []Backup {
	var out []Backup
	for _, info := range infos {
		if ki, ok := snapshot.ParseKey(prefix, info.Key); ok {
			out = append(out, Backup{Key: info.Key, KeyInfo: ki})
		}
	}
	slices.SortFunc(out, func(a, b Backup) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Revision, a.Revision); c != 0 {
			return c
		}
		return cmp.Compare(b.Key, a.Key)
	})
	return out
}

// Select returns the keys to delete: backups beyond MaxBackups or older than MaxAge at now,
// except the newest and the protected key.
func Select(prefix string, infos []backend.ObjectInfo, p Policy, now time.Time, protect string) []string {
	if p.IsZero() {
		return nil
	}
	var del []string
	for i, b := range Parse(prefix, infos) {
		if i == 0 || b.Key == protect {
			continue
		}
		tooMany := p.MaxBackups > 0 && i >= p.MaxBackups
		tooOld := p.MaxAge > 0 && now.Sub(b.Time) > p.MaxAge
		if tooMany || tooOld {
			del = append(del, b.Key)
		}
	}
	return del
}

// Apply lists the objects under prefix in b (every page), and deletes what Select picks. It
// returns the deleted keys; on errors it keeps going and returns them joined.
func Apply(ctx context.Context, b backend.Backend, prefix string, p Policy, now time.Time, protect string) ([]string, error) {
	if p.IsZero() {
		return nil, nil
	}
	infos, err := b.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("listing backups under %q: %w", prefix, err)
	}
	var deleted []string
	var errs []error
	for _, key := range Select(prefix, infos, p, now, protect) {
		if err := b.Delete(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("deleting old backup %q: %w", key, err))
			continue
		}
		deleted = append(deleted, key)
	}
	return deleted, errors.Join(errs...)
}
