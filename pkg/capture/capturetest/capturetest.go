// Package capturetest writes captures for tests of the code that reads them.
package capturetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Put writes into b the capture of cluster id under backup prefix prefix after revision from,
// up to revision to: one put of a new key /k<revision> per revision, revision from+i received
// at at+i minutes, in segments of ten revisions.
func Put(t testing.TB, b backend.Backend, prefix string, id snapshot.Identity, from, to int64, at time.Time) {
	t.Helper()
	bld, err := capture.NewBuilder(id)
	if err != nil {
		t.Fatal(err)
	}
	for rev := from + 1; rev <= to; rev++ {
		ev := &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: fmt.Appendf(nil, "/k%d", rev), Value: []byte("v"), CreateRevision: rev, ModRevision: rev, Version: 1}}
		if err := bld.Append(rev, at.Add(time.Duration(rev-from)*time.Minute), []*mvccpb.Event{ev}); err != nil {
			t.Fatal(err)
		}
		if bld.Revisions() == 10 || rev == to {
			seg, err := bld.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Put(t.Context(), seg.Key(prefix), bytes.NewReader(seg.Data)); err != nil {
				t.Fatal(err)
			}
		}
	}
}
