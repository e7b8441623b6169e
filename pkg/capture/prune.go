package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Prune deletes the segments under backup prefix prefix that no full backup needs, for the
// clusters match accepts (segments of other clusters are never touched). A segment is needed
// when a backup of its exact cluster (namespace, name and cluster ID) under the prefix is older
// than the segment's last revision: a restore of that backup replays it. oldest maps each
// cluster to the revision of its oldest backup kept; the segments of a cluster absent from it
// (none of its backups is left) are all deleted. Only keys ParseSegmentKey accepts, under
// exactly prefix, are considered. It keeps going after a failed delete and returns the keys it
// deleted and the errors joined.
func Prune(ctx context.Context, b backend.Backend, prefix string, match func(snapshot.Identity) bool, oldest map[snapshot.Identity]int64) ([]string, error) {
	infos, err := b.List(ctx, prefix+SegmentsSuffix+"/")
	if err != nil {
		return nil, fmt.Errorf("listing the segments under %q: %w", prefix, err)
	}
	var deleted []string
	var errs []error
	for _, o := range infos {
		p, info, ok := ParseSegmentKey(o.Key)
		if !ok || p != prefix || !match(info.Identity) {
			continue
		}
		if base, kept := oldest[info.Identity]; kept && info.Last > base {
			continue
		}
		if err := b.Delete(ctx, o.Key); err != nil && !backend.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting segment %q: %w", o.Key, err))
			continue
		}
		deleted = append(deleted, o.Key)
	}
	return deleted, errors.Join(errs...)
}
