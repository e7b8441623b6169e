package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// store puts segments holding each list of revisions into a memory backend under prefix p.
func store(t *testing.T, b backend.Backend, segs ...[]int64) []string {
	t.Helper()
	var keys []string
	for _, revs := range segs {
		seg := buildSegment(t, testID, revs...)
		keys = append(keys, seg.Key("p"))
		if err := b.Put(context.Background(), seg.Key("p"), bytes.NewReader(seg.Data)); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func span(from, to int64) []int64 {
	var out []int64
	for r := from; r <= to; r++ {
		out = append(out, r)
	}
	return out
}

// TestCheck: the checker finds gaps between and inside segments, duplicates between segments
// and inside one, invalid segments, and limits itself to the range asked.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		segs     [][]int64
		corrupt  int // index of a segment to flip a byte of, -1 for none
		repeat   int // index of a segment whose second record repeats its first, -1 for none
		from, to int64
		want     string
	}{
		{"contiguous", [][]int64{span(5, 9), span(10, 10), span(11, 20)}, -1, -1, 0, 0,
			"5-20 revs=16 gaps=[] dups=[] invalid=0"},
		{"asked range", [][]int64{span(5, 9), span(10, 10), span(11, 20)}, -1, -1, 10, 15,
			"10-15 revs=6 gaps=[] dups=[] invalid=0"},
		{"missing head and tail", [][]int64{span(5, 9)}, -1, -1, 3, 12,
			"5-9 revs=5 gaps=[{3 4} {10 12}] dups=[] invalid=0"},
		{"gap between", [][]int64{span(5, 9), span(12, 20)}, -1, -1, 0, 0,
			"5-20 revs=14 gaps=[{10 11}] dups=[] invalid=0"},
		{"gap inside", [][]int64{{5, 6, 8, 9}, span(10, 12)}, -1, -1, 0, 0,
			"5-12 revs=7 gaps=[{7 7}] dups=[] invalid=0"},
		{"overlap", [][]int64{span(5, 9), span(8, 12), span(12, 14)}, -1, -1, 0, 0,
			"5-14 revs=10 gaps=[] dups=[{8 9} {12 12}] invalid=0"},
		{"contained", [][]int64{span(5, 9), span(5, 7), span(8, 9)}, -1, -1, 0, 0,
			"5-9 revs=5 gaps=[] dups=[{5 9}] invalid=0"},
		{"a later segment fills a gap", [][]int64{{5, 6, 8, 9}, {7}}, -1, -1, 0, 0,
			"5-9 revs=5 gaps=[] dups=[] invalid=0"},
		{"corrupt", [][]int64{span(5, 9), span(10, 14), span(15, 19)}, 1, -1, 0, 0,
			"5-19 revs=10 gaps=[{10 14}] dups=[] invalid=1"},
		{"repeat inside", [][]int64{span(5, 9), span(10, 14)}, -1, 1, 0, 0,
			"5-9 revs=5 gaps=[] dups=[{10 10}] invalid=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := memory.New()
			keys := store(t, b, tc.segs...)
			if tc.corrupt >= 0 {
				rewrite(t, b, keys[tc.corrupt], func(d []byte) []byte { d[len(d)/2] ^= 1; return d })
			}
			if tc.repeat >= 0 {
				rewrite(t, b, keys[tc.repeat], func(d []byte) []byte {
					setRecordRev(d, 1, tc.segs[tc.repeat][0])
					return rehash(d)
				})
			}
			// Objects that are not this cluster's segments are ignored.
			other := buildSegment(t, snapshot.Identity{Namespace: "prod", Cluster: "other", ClusterID: 2}, 5, 6)
			for _, k := range []string{other.Key("p"), SegmentDir("p", testID) + "notes.txt", snapshot.ClusterKey("p", testID, 4, t0)} {
				if err := b.Put(ctx, k, bytes.NewReader(other.Data)); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := Check(ctx, b, "p", testID, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%d-%d revs=%d gaps=%v dups=%v invalid=%d", rep.First, rep.Last, rep.Revisions, rep.Gaps, rep.Duplicates, len(rep.Invalid))
			if got != tc.want {
				t.Fatalf("Check = %s\nwant    %s", got, tc.want)
			}
			if rep.OK() != (tc.want == fmt.Sprintf("%d-%d revs=%d gaps=[] dups=[] invalid=0", rep.First, rep.Last, rep.Revisions)) {
				t.Fatalf("OK() = %t for %s", rep.OK(), got)
			}
			for _, p := range rep.Invalid {
				if !errors.Is(p.Err, ErrCorrupt) || !slices.Contains(keys, p.Key) {
					t.Fatalf("invalid %s: %v", p.Key, p.Err)
				}
			}
		})
	}
}

// TestCheckCountsEvents: Events counts the events of the revisions in the range.
func TestCheckCountsEvents(t *testing.T) {
	b := memory.New()
	store(t, b, span(5, 12)) // revision 5+i has i%4+1 events
	rep, err := Check(context.Background(), b, "p", testID, 6, 9)
	if err != nil || rep.Events != 2+3+4+1 || rep.Segments != 1 || !rep.OK() {
		t.Fatalf("Check = %+v, %v; want 10 events in 1 segment", rep, err)
	}
}

// TestLastCaptured: the last revision of the segment that reaches furthest, verified; 0
// without segments.
func TestLastCaptured(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	if h, err := LastCaptured(ctx, b, "p", testID); h.LastRevision != 0 || err != nil {
		t.Fatalf("LastCaptured of nothing = %d, %v", h.LastRevision, err)
	}
	keys := store(t, b, span(5, 9), span(10, 30), span(31, 31))
	if h, err := LastCaptured(ctx, b, "p", testID); h.LastRevision != 31 || h.LastTime.IsZero() || err != nil {
		t.Fatalf("LastCaptured = %d at %v, %v; want 31 and its time", h.LastRevision, h.LastTime, err)
	}
	rewrite(t, b, keys[2], func(d []byte) []byte { return d[:len(d)-1] })
	if h, err := LastCaptured(ctx, b, "p", testID); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LastCaptured with a truncated newest segment = %d, %v; want ErrCorrupt", h.LastRevision, err)
	}
	// A segment whose header disagrees with its key is not valid either.
	seg := buildSegment(t, testID, 32, 33)
	if err := b.Put(ctx, SegmentKey("p", testID, 32, 34, t0), bytes.NewReader(seg.Data)); err != nil {
		t.Fatal(err)
	}
	if h, err := LastCaptured(ctx, b, "p", testID); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LastCaptured with a mislabelled segment = %d, %v; want ErrCorrupt", h.LastRevision, err)
	}
}

// rewrite replaces the object under key with edit of its content.
func rewrite(t *testing.T, b backend.Backend, key string, edit func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	rc, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, key, bytes.NewReader(edit(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
}
