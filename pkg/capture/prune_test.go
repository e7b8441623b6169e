package capture_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/capture/capturetest"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// TestPrune: the segments a kept backup needs stay (the one holding the backup's revision and
// later), older ones of the same cluster go, a cluster without a backup loses all of its
// segments, and clusters match does not accept, other prefixes and foreign objects are left
// alone.
func TestPrune(t *testing.T) {
	b := memory.New()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	main := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xa}
	restored := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xb}
	other := snapshot.Identity{Namespace: "prod", Cluster: "other", ClusterID: 0xa}
	capturetest.Put(t, b, "etcd.backup", main, 1, 40, at)     // segments 2-11, 12-21, 22-31, 32-40
	capturetest.Put(t, b, "etcd.backup", restored, 1, 20, at) // 2-11, 12-20: no backup left
	capturetest.Put(t, b, "etcd.backup", other, 1, 20, at)    // not matched
	capturetest.Put(t, b, "etcd.backup2", main, 1, 20, at)    // another prefix
	if err := b.Put(t.Context(), "etcd.backup.segments/prod_main_000000000000000a/notes.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	before, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	same := func(id snapshot.Identity) bool { return id.Namespace == "prod" && id.Cluster == "main" }
	// The oldest backup of main kept is at revision 21: segment 12-21 holds nothing after it,
	// 22-31 does.
	deleted, err := capture.Prune(t.Context(), b, "etcd.backup", same, map[snapshot.Identity]int64{main: 21})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		capture.SegmentKey("etcd.backup", main, 2, 11, at.Add(time.Minute)),
		capture.SegmentKey("etcd.backup", main, 12, 21, at.Add(11*time.Minute)),
		capture.SegmentKey("etcd.backup", restored, 2, 11, at.Add(time.Minute)),
		capture.SegmentKey("etcd.backup", restored, 12, 20, at.Add(11*time.Minute)),
	}
	slices.Sort(deleted)
	slices.Sort(want)
	if !slices.Equal(deleted, want) {
		t.Fatalf("deleted %q, want %q", deleted, want)
	}
	after, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)-len(want) {
		t.Fatalf("%d objects left of %d; want %d deleted", len(after), len(before), len(want))
	}
	for _, o := range after {
		if slices.Contains(want, o.Key) {
			t.Fatalf("%s is still there", o.Key)
		}
	}
	// The capture of main from its backup at 21 on still replays.
	r, err := capture.Resolve(t.Context(), b, "etcd.backup", main, 21, capture.Target{})
	if err != nil || r.Revision != 40 {
		t.Fatalf("Resolve after Prune = %+v, %v; want revision 40", r, err)
	}
}
