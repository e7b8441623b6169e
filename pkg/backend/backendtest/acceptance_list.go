package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// ListKeys is how many keys testList creates: more than one page for every provider (S3 and
// GCS return at most 1000 keys per page).
const ListKeys = 1100

func testList(t *testing.T, b backend.Backend, root string) {
	ctx := t.Context()
	dir := root + "list/"
	var want []string
	for i := range ListKeys {
		want = append(want, fmt.Sprintf("%s%05d", dir, i))
	}
	// Byte order, not path order: "a.x" < "a/b" ('.' < '/'), and UTF-8 after ASCII.
	want = append(want, dir+"a/b", dir+"a.x", dir+"a-b", dir+"é")
	// Not "list" itself: a filesystem cannot hold both a file and a directory of that name.
	outside := []string{root + "lis", root + "list.txt", root + "lisu/x", root + "other/list/x"}

	all := append(slices.Clone(want), outside...)
	defer func() {
		if err := forEach(context.WithoutCancel(ctx), all, b.Delete); err != nil {
			t.Errorf("deleting listed keys: %v", err)
		}
	}()
	if err := forEach(ctx, all, func(ctx context.Context, key string) error {
		return b.Put(ctx, key, streamOnly{bytes.NewReader([]byte(key))})
	}); err != nil {
		t.Fatalf("creating %d keys: %v", len(all), err)
	}
	slices.Sort(want)

	cases := []struct {
		name   string
		prefix string
		want   []string
	}{
		{"whole directory", dir, want},
		{"partial name", dir + "001", want[100:200]},
		{"single key", dir + "a.x", []string{dir + "a.x"}},
		{"no match", root + "nothing-here/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			infos, err := b.List(ctx, tc.prefix)
			if err != nil {
				t.Fatalf("List(%q): %v", tc.prefix, err)
			}
			got := make([]string, 0, len(infos))
			for _, info := range infos {
				got = append(got, info.Key)
				if info.Size != int64(len(info.Key)) {
					t.Errorf("List: %q has size %d, want %d", info.Key, info.Size, len(info.Key))
				}
			}
			if !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
				t.Fatalf("List(%q) returned %d keys, want %d sorted keys; first difference: %s",
					tc.prefix, len(got), len(tc.want), firstDiff(got, tc.want))
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("index %d: got %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// forEach runs fn for every key, 16 at a time.
func forEach(ctx context.Context, keys []string, fn func(context.Context, string) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range keys {
		g.Go(func() error { return fn(ctx, k) })
	}
	return g.Wait()
}

func testFailedUpload(t *testing.T, b backend.Backend, root string, data []byte) {
	old := randomBytes(10<<10, 5)
	cases := []struct {
		name      string
		failAfter int
		cancel    bool
		existing  bool
	}{
		{"reader error in the first part", 64 << 10, false, false},
		{"reader error after several parts", 11 << 20, false, false},
		{"context cancelled in the first part", 64 << 10, true, false},
		{"context cancelled after several parts", 11 << 20, true, false},
		{"failed overwrite keeps the old object", 11 << 20, false, true},
		{"cancelled overwrite keeps the old object", 11 << 20, true, true},
	}
	dir := root + "failed/"
	var kept []string
	for i, tc := range cases {
		key := fmt.Sprintf("%s%d", dir, i)
		t.Run(tc.name, func(t *testing.T) {
			if tc.existing {
				put(t, b, key, old)
				kept = append(kept, key)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &breakingReader{data: data, failAfter: tc.failAfter}
			wantErr := errInjected
			if tc.cancel {
				r.cancel, wantErr = cancel, context.Canceled
			}
			err := b.Put(ctx, key, r)
			if !errors.Is(err, wantErr) {
				t.Fatalf("Put with a breaking stream = %v, want an error wrapping %v", err, wantErr)
			}
			if !tc.existing {
				if info, err := b.Stat(t.Context(), key); !backend.IsNotFound(err) {
					t.Fatalf("after a failed upload Stat(%q) = %+v, %v; want not found", key, info, err)
				}
				return
			}
			if gotSum, gotLen := get(t, b, key); gotSum != sum(old) {
				t.Fatalf("after a failed overwrite Get(%q) = %d bytes %s, want the old %d bytes %s",
					key, gotLen, gotSum, len(old), sum(old))
			}
		})
	}
	infos, err := b.List(t.Context(), dir)
	if err != nil {
		t.Fatalf("List(%q): %v", dir, err)
	}
	var got []string
	for _, info := range infos {
		got = append(got, info.Key)
	}
	if !slices.Equal(got, kept) {
		t.Fatalf("List(%q) after failed uploads = %q, want only the older objects %q", dir, got, kept)
	}
	for _, k := range kept {
		mustDelete(t, b, k)
	}
}
