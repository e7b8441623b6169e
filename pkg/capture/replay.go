package capture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// DefaultReplayLeaseTTL is the TTL, in seconds, of a lease that a replay gives back to keys put
// after the full backup: the capture holds a key's lease ID, not the lease's TTL.
const DefaultReplayLeaseTTL = 60

// ErrNotCaptured is wrapped when the capture does not reach the target revision: it ends, or
// has a gap, before it.
var ErrNotCaptured = errors.New("capture: the target revision is not captured")

// Target is how far a point-in-time replay goes; the zero Target replays every captured
// revision.
type Target struct {
	// Revision, when positive, is the last revision replayed. The capture must reach it.
	Revision int64
	// Time, when not zero, bounds the replay to the revisions the capturer received at or
	// before it.
	Time time.Time
}

// String describes t for messages.
func (t Target) String() string {
	switch {
	case t.Revision > 0 && !t.Time.IsZero():
		return fmt.Sprintf("revision %d or %s, whichever comes first", t.Revision, t.Time.UTC().Format(time.RFC3339Nano))
	case t.Revision > 0:
		return fmt.Sprintf("revision %d", t.Revision)
	case !t.Time.IsZero():
		return t.Time.UTC().Format(time.RFC3339Nano)
	}
	return "the newest captured revision"
}

// includes reports whether rec is at or before t.
func (t Target) includes(rec Record) bool {
	return (t.Revision <= 0 || rec.Revision <= t.Revision) && (t.Time.IsZero() || !rec.Time.After(t.Time))
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// LeaseTTL is the TTL in seconds of the leases Replay writes back (see Replay);
	// DefaultReplayLeaseTTL if 0.
	LeaseTTL int64
}

// Replayed is what a replay did.
type Replayed struct {
	// From is the first revision replayed: the data's revision + 1.
	From int64
	// Revision is the data's revision after the replay (From - 1 when nothing was replayed),
	// and Time when the capturer received it (zero when nothing was replayed).
	Revision int64
	Time     time.Time
	// Revisions and Events are how many revisions and events were replayed; Segments how many
	// segments were read, and Leases how many leases were written back.
	Revisions, Events int64
	Segments, Leases  int
	// Exact reports that the capture holds the revision after Revision and that it is past the
	// target: the data is the keyspace at the target, not merely the newest captured one.
	Exact bool
}

// Replay brings the etcd data file at path (a member's member/snap/db restored from the full
// backup, without --bump-revision, or the backup itself without etcd's trailing sha256) to the
// target: it applies, revision after revision from the data's revision + 1, the changes the
// segments of cluster id under prefix hold, as etcd's store writes them (the same revisions,
// sub revisions, create revisions and versions, so a running etcd on the result serves the
// keyspace, and HashKV, of the captured cluster at that revision).
//
// Every segment is read to its trailer and verified (one that does not verify fails the
// replay), every change is checked to apply to the data (a put's create revision and version,
// a deletion of a live key), and the revisions must follow each other without a gap. A target revision the capture does not
// reach is an error wrapping ErrNotCaptured; a target time past the capture's end replays
// everything (Replayed.Exact false). On error the file holds part of the replay: discard it.
//
// Leases are not in the capture, only the lease ID of each key (see the package
// documentation). A key put after the full backup with a lease the data does not hold gets
// that lease back with ID and opts.LeaseTTL: its owner, still alive, keeps it alive as before;
// otherwise the key expires LeaseTTL after the restored cluster starts, as etcd's own restore
// renews every lease it restores. Auth (users, roles) stays as the full backup holds it.
//
// Memory use is one record plus the data's key index (each live key and two integers).
func Replay(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, path string, target Target, opts ReplayOptions) (Replayed, error) {
	ttl := opts.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultReplayLeaseTTL
	}
	d, err := openData(path)
	if err != nil {
		return Replayed{}, err
	}
	leases := 0
	res, err := walk(ctx, b, prefix, id, d.revision, target, func(rec Record) error {
		n, err := d.apply(rec, ttl)
		leases += n
		return err
	})
	res.Leases = leases
	if cerr := d.close(err != nil); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", path, cerr)
	}
	return res, err
}

// Resolve finds the point Replay would bring data at revision base to, without data: it reads
// and verifies the segments as Replay does. A restore of several members resolves the target
// once and replays each member to the revision found, so that all reach the same point while
// the capture goes on.
func Resolve(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, base int64, target Target) (Replayed, error) {
	return walk(ctx, b, prefix, id, base, target, nil)
}

// walk reads the captured records after revision base in order, up to target, calls apply
// (when not nil) with each, and reports the point reached; see Replay.
func walk(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, base int64, target Target, apply func(Record) error) (Replayed, error) {
	res := Replayed{From: base + 1, Revision: base}
	if target.Revision > 0 && target.Revision < base {
		return res, fmt.Errorf("%w: the data is at revision %d, after the target revision %d: restore an older full backup", ErrNotCaptured, base, target.Revision)
	}
	if err := walkSegments(ctx, b, prefix, id, target, apply, &res); err != nil {
		return res, fmt.Errorf("replaying the capture of %s onto revision %d to %s: %w", id.Describe(), base, target, err)
	}
	if target.Revision > 0 && res.Revision < target.Revision && !res.Exact {
		return res, fmt.Errorf("%w: the capture of %s ends at revision %d, before revision %d", ErrNotCaptured, id.Describe(), res.Revision, target.Revision)
	}
	return res, nil
}

func walkSegments(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, target Target, apply func(Record) error, res *Replayed) error {
	segs, err := ListSegments(ctx, b, prefix, id)
	if err != nil {
		return fmt.Errorf("listing segments: %w", err)
	}
	for _, o := range segs {
		if o.Last <= res.Revision {
			continue // before the data: overlaps from a resumed capture are skipped
		}
		if o.First > res.Revision+1 {
			beyond, err := targetBeyond(ctx, b, o, target)
			if err != nil {
				return err
			}
			if beyond {
				return fmt.Errorf("%w: revisions %d to %d are missing (the next segment, %s, starts at %d)", ErrNotCaptured, res.Revision+1, o.First-1, o.Key, o.First)
			}
			return nil // the target is in the gap: the data stops before it (Exact false)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Records are applied as they are read, before the segment's trailer is verified, and
		// a large replay commits as it goes: a segment that turns out corrupt fails the replay
		// with its records partly written, which is why a failed replay's file is discarded.
		// Past the target, the rest of the segment is still read, to verify what was applied.
		past := false
		_, err := ReadSegment(ctx, b, o, func(rec Record) error {
			if past || rec.Revision <= res.Revision {
				return nil
			}
			if !target.includes(rec) {
				past = true
				return nil
			}
			if rec.Revision != res.Revision+1 {
				return fmt.Errorf("%w: revisions %d to %d are missing in segment %s", ErrNotCaptured, res.Revision+1, rec.Revision-1, o.Key)
			}
			if apply != nil {
				if err := apply(rec); err != nil {
					return err
				}
			}
			res.Revision, res.Time = rec.Revision, rec.Time
			res.Revisions++
			res.Events += int64(len(rec.Events))
			return nil
		})
		res.Segments++
		if err != nil {
			return err
		}
		if past || (target.Revision > 0 && res.Revision >= target.Revision) {
			res.Exact = true
			return nil
		}
	}
	return nil
}

// targetBeyond reports whether target lies at or after the segment o that follows a gap: always
// for the zero Target (the newest point is beyond the gap); for a revision, when o starts at or
// before it; for a time, when o's first revision was received at or before it.
func targetBeyond(ctx context.Context, b backend.Backend, o Object, target Target) (bool, error) {
	if target.Revision > 0 {
		return o.First <= target.Revision, nil
	}
	if target.Time.IsZero() {
		return true, nil
	}
	rc, err := b.Get(ctx, o.Key)
	if err != nil {
		return false, fmt.Errorf("reading segment %s: %w", o.Key, err)
	}
	defer rc.Close()
	r, err := NewReader(rc)
	if err != nil {
		return false, fmt.Errorf("segment %s: %w", o.Key, err)
	}
	return !r.Header().FirstTime.After(target.Time), nil
}
