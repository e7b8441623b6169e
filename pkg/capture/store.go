package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Object is a segment object found in a store.
type Object struct {
	// Key is the object's key.
	Key string
	// Size is its length in bytes.
	Size int64
	// SegmentInfo is what the key says.
	SegmentInfo
}

// ListSegments returns the segments of cluster id under backup prefix prefix, sorted by first
// and then last revision. Objects in the directory whose keys are not segment keys of exactly
// this prefix and identity are left out.
func ListSegments(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity) ([]Object, error) {
	infos, err := b.List(ctx, SegmentDir(prefix, id))
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, o := range infos {
		p, info, ok := ParseSegmentKey(o.Key)
		if !ok || p != prefix || info.Identity != id {
			continue
		}
		out = append(out, Object{Key: o.Key, Size: o.Size, SegmentInfo: info})
	}
	slices.SortStableFunc(out, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.First, b.First), cmp.Compare(a.Last, b.Last))
	})
	return out, nil
}

// ReadSegment streams the segment o through a Reader and calls fn with each record, in
// revision order. It returns the header once the whole segment is verified: its trailer, and
// that the header agrees with the key (identity, first and last revision). Records passed to fn
// are provisional until ReadSegment returns nil. A segment that is not valid is an error
// wrapping ErrCorrupt; an error of fn is returned as it is.
func ReadSegment(ctx context.Context, b backend.Backend, o Object, fn func(Record) error) (Header, error) {
	rc, err := b.Get(ctx, o.Key)
	if err != nil {
		return Header{}, err
	}
	defer rc.Close()
	r, err := NewReader(rc)
	if err != nil {
		return Header{}, fmt.Errorf("segment %s: %w", o.Key, err)
	}
	h := r.Header()
	if h.Identity != o.Identity || h.FirstRevision != o.First || h.LastRevision != o.Last {
		return Header{}, fmt.Errorf("%w: segment %s: its header says %s, revisions %d-%d", ErrCorrupt, o.Key,
			h.Identity.Describe(), h.FirstRevision, h.LastRevision)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return h, nil
		}
		if err != nil {
			return Header{}, fmt.Errorf("segment %s: %w", o.Key, err)
		}
		if fn != nil {
			if err := fn(rec); err != nil {
				return Header{}, err
			}
		}
	}
}

// LastCaptured returns the header of the segment of cluster id under prefix that reaches
// furthest, after verifying that segment (an error wrapping ErrCorrupt when it is not valid):
// its LastRevision is the last revision captured, its LastTime when that revision was
// received. It returns the zero Header when there is no segment. A Capturer started at
// LastRevision + 1 continues the capture without gap or duplicate (Check verifies the whole
// sequence).
func LastCaptured(ctx context.Context, b backend.Backend, prefix string, id snapshot.Identity) (Header, error) {
	segs, err := ListSegments(ctx, b, prefix, id)
	if err != nil || len(segs) == 0 {
		return Header{}, err
	}
	newest := slices.MaxFunc(segs, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Last, b.Last), cmp.Compare(a.First, b.First))
	})
	return ReadSegment(ctx, b, newest, nil)
}
