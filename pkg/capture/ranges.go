package capture

import "sort"

// Range is the revisions From to To, both included.
type Range struct {
	From, To int64
}

// Len is the number of revisions in r.
func (r Range) Len() int64 { return r.To - r.From + 1 }

// rangeSet is a set of revisions as sorted, disjoint, non-adjacent ranges: a capture without
// gaps is one range, however many revisions it holds.
type rangeSet []Range

// add puts r into the set and returns the parts of r that were in it already.
func (s *rangeSet) add(r Range) []Range {
	set := *s
	// The first range that overlaps r or touches it from below.
	i := sort.Search(len(set), func(i int) bool { return set[i].To >= r.From-1 })
	merged := r
	var overlap []Range
	j := i
	for ; j < len(set) && set[j].From-1 <= r.To; j++ { // (From-1: revisions are >= 1, To may be MaxInt64)
		if lo, hi := max(set[j].From, r.From), min(set[j].To, r.To); lo <= hi {
			overlap = append(overlap, Range{From: lo, To: hi})
		}
		merged.From, merged.To = min(merged.From, set[j].From), max(merged.To, set[j].To)
	}
	*s = append(set[:i], append([]Range{merged}, set[j:]...)...)
	return overlap
}

// total is the number of revisions in the set.
func (s rangeSet) total() int64 {
	var n int64
	for _, r := range s {
		n += r.Len()
	}
	return n
}

// missing returns the revisions of [lo, hi] that are not in the set.
func (s rangeSet) missing(lo, hi int64) []Range {
	var out []Range
	next := lo
	for _, r := range s {
		if r.To < next {
			continue
		}
		if r.From > hi {
			break
		}
		if r.From > next {
			out = append(out, Range{From: next, To: r.From - 1})
		}
		if r.To >= hi {
			return out
		}
		next = r.To + 1
	}
	if next <= hi {
		out = append(out, Range{From: next, To: hi})
	}
	return out
}

// runs collects strictly increasing revisions into ranges.
type runs []Range

func (r *runs) add(rev int64) {
	if n := len(*r); n > 0 && (*r)[n-1].To == rev-1 {
		(*r)[n-1].To = rev
		return
	}
	*r = append(*r, Range{From: rev, To: rev})
}
