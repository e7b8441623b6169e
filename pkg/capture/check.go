package capture

import (
	"context"
	"errors"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Problem is a segment that failed verification.
type Problem struct {
	// Key is the segment's key.
	Key string
	// Err says why; it wraps ErrCorrupt.
	Err error
}

// Report is what Check found.
type Report struct {
	// From and To are the revisions checked: as asked, or the first and last revision found
	// where Check was given 0.
	From, To int64
	// Segments is the number of segments read (those whose keys overlap [From, To]).
	Segments int
	// Invalid lists the segments that failed verification; their revisions count as missing.
	Invalid []Problem
	// First and Last are the first and last revision of [From, To] that valid segments hold; 0
	// when there is none.
	First, Last int64
	// Revisions is the number of distinct revisions of [From, To] that valid segments hold.
	Revisions int64
	// Events is the number of events in the records of [From, To] read from valid segments (a
	// duplicated revision's events count twice).
	Events int64
	// Gaps are the revisions of [From, To] that no valid segment holds.
	Gaps []Range
	// Duplicates are the revisions of [From, To] that two segments hold, or that one segment
	// holds twice (such a segment is also Invalid).
	Duplicates []Range
}

// OK reports whether Check found no gap, no duplicate and no invalid segment.
func (r *Report) OK() bool {
	return len(r.Gaps) == 0 && len(r.Duplicates) == 0 && len(r.Invalid) == 0
}

// Check reads and verifies every segment of cluster id under prefix that overlaps revisions
// from to to (from <= 0: from the first revision captured; to <= 0: to the last), and reports
// the gaps and duplicates among the revisions they hold.
//
// Every revision of an etcd keyspace is made by a change of at least one key (a request that
// changes nothing does not advance the revision; leases and auth have no revisions of their
// own), and each such change is a watch event at that revision. A capture is complete exactly
// when its revisions are contiguous: any revision missing from [from, to] is a gap, whether it
// falls between two segments or inside one.
//
// Memory use is one record plus the gaps and duplicates found. Check returns an error only when
// the store fails (listing or reading); a segment that is not valid is reported in Invalid.
func Check(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity, from, to int64) (Report, error) {
	segs, err := ListSegments(ctx, b, prefix, id)
	if err != nil {
		return Report{}, err
	}
	rep := Report{From: from, To: to}
	in := func(rev int64) bool { return (from <= 0 || rev >= from) && (to <= 0 || rev <= to) }
	var covered, dups rangeSet
	for _, o := range segs {
		if (from > 0 && o.Last < from) || (to > 0 && o.First > to) {
			continue
		}
		rep.Segments++
		var revs runs
		var events int64
		_, err := ReadSegment(ctx, b, o, func(rec Record) error {
			if in(rec.Revision) {
				revs.add(rec.Revision)
				events += int64(len(rec.Events))
			}
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return rep, err
			}
			rep.Invalid = append(rep.Invalid, Problem{Key: o.Key, Err: err})
			if re := (*repeatError)(nil); errors.As(err, &re) && in(re.rev) {
				dups.add(Range{From: re.rev, To: re.rev})
			}
			continue
		}
		rep.Events += events
		for _, r := range revs {
			for _, d := range covered.add(r) {
				dups.add(d)
			}
		}
	}
	if len(covered) > 0 {
		rep.First, rep.Last = covered[0].From, covered[len(covered)-1].To
	}
	if rep.From <= 0 {
		rep.From = rep.First
	}
	if rep.To <= 0 {
		rep.To = rep.Last
	}
	if rep.From > 0 && rep.To >= rep.From {
		rep.Gaps = covered.missing(rep.From, rep.To)
	}
	rep.Revisions, rep.Duplicates = covered.total(), dups
	return rep, nil
}
