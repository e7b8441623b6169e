package etcdbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// startPoint is where a capture begins.
type startPoint struct {
	// revision is the first revision to capture.
	revision int64
	// why says, for the condition's message, what the capture continues.
	why string
	// continued is when the revision before it was received (the last one captured) or
	// taken (the full backup's).
	continued time.Time
}

// findStart finds where the capture of cluster id under backup prefix prefix begins, from what
// the store holds: after the last revision captured when etcd still has the revisions after it
// (the capture goes on without a gap), else after the newest full backup of id (its key's
// revision; the capture may repeat revisions the snapshot holds, which a replay skips). compacted
// is etcd's compaction revision as the last capture met it (0: unknown; a watch from a
// compacted revision then says so). Without either, it returns an error wrapping errNoBase.
func findStart(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, compacted int64) (startPoint, error) {
	last, err := capture.LastCaptured(ctx, b, prefix, id)
	if errors.Is(err, capture.ErrCorrupt) {
		return startPoint{}, fmt.Errorf("reading the last segment of %s: %w", id.Describe(), err)
	}
	if err != nil {
		return startPoint{}, fmt.Errorf("%w: reading the last segment of %s: %w", errStore, id.Describe(), err)
	}
	infos, err := b.List(ctx, prefix)
	if err != nil {
		return startPoint{}, fmt.Errorf("%w: listing the backups under %q: %w", errStore, prefix, err)
	}
	var base int64
	var taken time.Time
	for _, bk := range retention.ParseAt(prefix, infos, time.Now()) {
		if bk.Identity == id && bk.Revision > base {
			base, taken = bk.Revision, bk.Time
		}
	}
	p, err := pickStart(last.LastRevision, base, compacted, id)
	if p.revision == last.LastRevision+1 {
		p.continued = last.LastTime
	} else {
		p.continued = taken
	}
	return p, err
}

// pickStart is findStart's decision: last is the last revision captured (0: none), base the
// revision of the newest full backup (0: none).
func pickStart(last, base, compacted int64, id snapshot.Identity) (startPoint, error) {
	switch {
	case last > 0 && last >= compacted:
		return startPoint{revision: last + 1, why: fmt.Sprintf("after revision %d, the last one captured", last)}, nil
	case base > 0 && base >= compacted && base > last:
		return startPoint{revision: base + 1, why: fmt.Sprintf("after revision %d, the newest full backup's", base)}, nil
	case base == 0 && last == 0:
		return startPoint{}, fmt.Errorf("%w: no full backup of %s under the prefix yet", errNoBase, id.Describe())
	}
	return startPoint{}, fmt.Errorf("%w: etcd compacted the revisions up to %d; the newest full backup of %s is at revision %d and the capture reached revision %d",
		errNoBase, compacted, id.Describe(), base, last)
}
