package etcdbackup

import (
	"context"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// statTimeout bounds the check that an exact path is free.
const statTimeout = time.Minute

// claimedError: a one-shot backup to an exact path found no object there; the pass that takes
// this outcome records the location as its own in status, and the upload happens in the next
// run, once that record is stored.
type claimedError struct{ location string }

func (e *claimedError) Error() string { return "claimed the backup's exact path " + e.location }

// claimExactPath guards a one-shot backup to an exact path (not a prefix) against overwriting an
// object it did not write. The first pass checks with Stat that nothing is stored at the key and
// has the location recorded in status (claimedError); only a pass that finds its own location recorded
// uploads. So a retry after a failed status patch or after an upload whose answer was lost
// overwrites only the backup's own object, and an object written by anyone else (another
// backup, an older backup at a re-used path) fails the backup with ObjectExists.
//
// Two backups that Stat the same empty key at the same moment can still both write it: the
// object stores offer no conditional upload through backend.Backend.
func claimExactPath(ctx context.Context, obj *etcdv1beta2.EtcdBackup, store *storage.Store) error {
	loc := store.URL()
	if obj.Status.Location == loc {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, statTimeout)
	defer cancel()
	info, err := store.Stat(ctx, store.Key)
	switch {
	case err == nil:
		return reason.New(etcdv1beta2.ReasonObjectExists, fmt.Errorf(
			"%s already holds an object (%d bytes, written %s) that this EtcdBackup did not write: backups never overwrite an object; "+
				"pick a new path, or back up under a prefix (pathType: Prefix, or an EtcdBackupSchedule) where every backup gets its own key",
			loc, info.Size, info.ModTime.UTC().Format("2006-01-02T15:04:05Z")))
	case backend.IsNotFound(err):
		return &claimedError{location: loc}
	default: // classify: InvalidCredentials on 401/403, else StorageUnreachable (retried)
		return fmt.Errorf("%w: checking %s is free: %w", snapshot.ErrStorage, loc, err)
	}
}
