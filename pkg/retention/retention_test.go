package retention

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// objs returns one backup per hour from t0 with the given revisions, plus foreign objects.
func objs(prefix string, revs ...int64) []backend.ObjectInfo {
	var out []backend.ObjectInfo
	for i, rev := range revs {
		out = append(out, backend.ObjectInfo{Key: snapshot.ObjectKey(prefix, rev, t0.Add(time.Duration(i)*time.Hour))})
	}
	out = append(out,
		backend.ObjectInfo{Key: prefix},                              // a one-shot backup at the prefix itself
		backend.ObjectInfo{Key: prefix + "_v01_2018-01-01-00:00:00"}, // not as coreos writes its keys (those count: TestSelectTwoClustersUnderOnePrefix)
		backend.ObjectInfo{Key: prefix + "-other_20200101T000000Z_v00000000000000000001"},
		backend.ObjectInfo{Key: "unrelated"},
	)
	backend.SortObjects(out)
	return out
}

func key(prefix string, i int, rev int64) string {
	return snapshot.ObjectKey(prefix, rev, t0.Add(time.Duration(i)*time.Hour))
}

func TestSelect(t *testing.T) {
	revs := []int64{98, 99, 100, 101, 1000} // digit changes: string order of revisions would lie
	now := t0.Add(5 * time.Hour)
	cases := []struct {
		name    string
		infos   []backend.ObjectInfo
		p       Policy
		protect string
		want    []string
	}{
		{"keep all", objs("p", revs...), Policy{}, "", nil},
		{"max 2", objs("p", revs...), Policy{MaxBackups: 2}, "", []string{key("p", 2, 100), key("p", 1, 99), key("p", 0, 98)}},
		{"max 1 keeps newest", objs("p", revs...), Policy{MaxBackups: 1}, "", []string{key("p", 3, 101), key("p", 2, 100), key("p", 1, 99), key("p", 0, 98)}},
		{"max age 2h30m", objs("p", revs...), Policy{MaxAge: 150 * time.Minute}, "", []string{key("p", 2, 100), key("p", 1, 99), key("p", 0, 98)}},
		{"max age deletes all but newest", objs("p", revs...), Policy{MaxAge: time.Minute}, "", []string{key("p", 3, 101), key("p", 2, 100), key("p", 1, 99), key("p", 0, 98)}},
		{"both limits", objs("p", revs...), Policy{MaxBackups: 4, MaxAge: 3*time.Hour + time.Minute}, "", []string{key("p", 1, 99), key("p", 0, 98)}},
		{"protected survives", objs("p", revs...), Policy{MaxBackups: 1}, key("p", 1, 99), []string{key("p", 3, 101), key("p", 2, 100), key("p", 0, 98)}},
		{"only foreign objects", objs("p"), Policy{MaxBackups: 1}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Select(Request{Prefix: "p", Owner: idA, Policy: tc.p, Now: now, Protect: tc.protect}, tc.infos).Delete
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Select = %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestSelectNewestByTimeNotRevision: after a restore the revision can go down; the newest by
// time is kept.
func TestSelectNewestByTimeNotRevision(t *testing.T) {
	infos := objs("p", 5000, 6000, 100) // restored to an older backup at hour 2
	got := Select(Request{Prefix: "p", Owner: idA, Policy: Policy{MaxBackups: 1}, Now: t0.Add(3 * time.Hour)}, infos).Delete
	want := []string{key("p", 1, 6000), key("p", 0, 5000)}
	if !slices.Equal(got, want) {
		t.Fatalf("Select = %v, want %v", got, want)
	}
}

// TestApplyManyObjects runs Apply over 2500 backups (more than one listing page of every
// store) in the memory backend.
func TestApplyManyObjects(t *testing.T) {
	b := memory.New()
	ctx := t.Context()
	const n = 2500
	for i := range n {
		k := snapshot.ObjectKey("dir/etcd.backup", int64(i*7), t0.Add(time.Duration(i)*time.Minute))
		if err := b.Put(ctx, k, stringsReader(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	_ = b.Put(ctx, "dir/etcd.backup", stringsReader("one-shot"))
	out, err := Apply(ctx, b, Request{Prefix: "dir/etcd.backup", Owner: idA, Policy: Policy{MaxBackups: 10}, Now: t0.Add(n * time.Minute)})
	if err != nil || len(out.Deleted) != n-10 {
		t.Fatalf("Apply deleted %d, %v", len(out.Deleted), err)
	}
	left, _ := b.List(ctx, "dir/")
	if len(left) != 11 {
		t.Fatalf("%d objects left, want 10 backups and the one-shot object", len(left))
	}
	newest := snapshot.ObjectKey("dir/etcd.backup", int64((n-1)*7), t0.Add((n-1)*time.Minute))
	if !slices.ContainsFunc(left, func(o backend.ObjectInfo) bool { return o.Key == newest }) {
		t.Fatal("newest backup deleted")
	}
}

func stringsReader(s string) *stringReader { return &stringReader{s: s} }

type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
