package backendtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// ObjectSize is the size of the large object AcceptanceTest writes: a few parts for every
// provider configured with the smallest part size it allows (S3: 5 MiB), and not a multiple of
// any part size.
const ObjectSize = 12<<20 + 517

// AcceptanceTest checks that b keeps the whole backend.Backend contract: streaming round trip
// with sha256 comparison, overwrite, range reads, stat, "not found" classification, idempotent
// delete, complete and sorted listing of more than 1000 keys, all-or-nothing uploads (a reader
// error or a cancelled context leaves no object and no listing entry, and keeps an older
// object), and the prefix decorator on top of b.
//
// It writes under a random top-level prefix and deletes what it wrote, so b may be shared.
// Providers should be configured with small parts (and small list pages where possible) so that
// multipart uploads and pagination are exercised.
func AcceptanceTest(t *testing.T, b backend.Backend) {
	root := UniqueName("acceptance-") + "/"
	data := randomBytes(ObjectSize, 1)

	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, b, root, data) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, b, root) })
	t.Run("Range", func(t *testing.T) { testRange(t, b, root, data) })
	t.Run("Stat", func(t *testing.T) { testStat(t, b, root) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, b, root) })
	t.Run("List", func(t *testing.T) { testList(t, b, root) })
	t.Run("FailedUpload", func(t *testing.T) { testFailedUpload(t, b, root, data) })
	t.Run("Prefix", func(t *testing.T) { testPrefix(t, b, root) })
	t.Run("NothingLeft", func(t *testing.T) { testClean(t, b, root) })
}

func testRoundTrip(t *testing.T, b backend.Backend, root string, big []byte) {
	cases := []struct {
		name string
		key  string
		data []byte
	}{
		{"multi-part object", root + "roundtrip/big", big},
		{"small object", root + "roundtrip/small", randomBytes(100<<10, 2)},
		{"empty object", root + "roundtrip/empty", nil},
		{"key with spaces and symbols", root + "roundtrip/dir with space/a+b=c&d%e,f~g.db", []byte("x")},
		{"non-ASCII key", root + "roundtrip/snapshot-é-ü", []byte("utf-8")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			put(t, b, tc.key, tc.data)
			gotSum, gotLen := get(t, b, tc.key)
			if gotLen != int64(len(tc.data)) || gotSum != sum(tc.data) {
				t.Fatalf("Get(%q) = %d bytes sha256 %s, want %d bytes sha256 %s",
					tc.key, gotLen, gotSum, len(tc.data), sum(tc.data))
			}
			if err := b.Delete(t.Context(), tc.key); err != nil {
				t.Fatalf("Delete(%q): %v", tc.key, err)
			}
		})
	}
}

func testOverwrite(t *testing.T, b backend.Backend, root string) {
	key := root + "overwrite"
	first, second := randomBytes(300<<10, 3), randomBytes(200<<10, 4)
	put(t, b, key, first)
	put(t, b, key, second)
	put(t, b, key, second) // idempotent: the same upload again changes nothing
	if gotSum, gotLen := get(t, b, key); gotSum != sum(second) || gotLen != int64(len(second)) {
		t.Fatalf("after overwrite Get(%q) = %d bytes %s, want the second object (%d bytes %s)",
			key, gotLen, gotSum, len(second), sum(second))
	}
	info, err := b.Stat(t.Context(), key)
	if err != nil || info.Size != int64(len(second)) {
		t.Fatalf("Stat(%q) = %+v, %v; want size %d", key, info, err, len(second))
	}
	mustDelete(t, b, key)
}

func testRange(t *testing.T, b backend.Backend, root string, data []byte) {
	key := root + "range"
	put(t, b, key, data)
	n := int64(len(data))
	cases := []struct {
		name           string
		offset, length int64
	}{
		{"first byte", 0, 1},
		{"whole object", 0, -1},
		{"across a 5 MiB part boundary", 5<<20 - 3, 1<<20 + 7},
		{"tail to the end", n - 100, -1},
		{"past the end is cut", n - 10, 100},
		{"last byte", n - 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			end := n
			if tc.length > 0 && tc.offset+tc.length < n {
				end = tc.offset + tc.length
			}
			want := data[tc.offset:end]
			rc, err := b.GetRange(t.Context(), key, tc.offset, tc.length)
			if err != nil {
				t.Fatalf("GetRange(%d, %d): %v", tc.offset, tc.length, err)
			}
			gotSum, gotLen := readAll(t, rc)
			if gotLen != int64(len(want)) || gotSum != sum(want) {
				t.Fatalf("GetRange(%d, %d) = %d bytes %s, want %d bytes %s",
					tc.offset, tc.length, gotLen, gotSum, len(want), sum(want))
			}
		})
	}
	mustDelete(t, b, key)
}

func testStat(t *testing.T, b backend.Backend, root string) {
	key := root + "stat"
	// Servers stamp objects with their own clock, S3 to the second; they run on this machine.
	const slack = 2 * time.Minute
	before := time.Now()
	put(t, b, key, bytes.Repeat([]byte("s"), 4321))
	after := time.Now()
	info, err := b.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	if info.Key != key || info.Size != 4321 {
		t.Errorf("Stat(%q) = key %q size %d, want key %q size 4321", key, info.Key, info.Size, key)
	}
	if info.ModTime.Before(before.Add(-slack)) || info.ModTime.After(after.Add(slack)) {
		t.Errorf("Stat(%q).ModTime = %v, want between %v and %v", key, info.ModTime, before, after)
	}
	mustDelete(t, b, key)
}

func testNotFound(t *testing.T, b backend.Backend, root string) {
	ctx := t.Context()
	missing := root + "missing/object"
	if _, err := b.Get(ctx, missing); !backend.IsNotFound(err) {
		t.Errorf("Get(missing) error = %v, want one IsNotFound accepts", err)
	}
	if _, err := b.GetRange(ctx, missing, 0, 10); !backend.IsNotFound(err) {
		t.Errorf("GetRange(missing) error = %v, want one IsNotFound accepts", err)
	}
	if _, err := b.Stat(ctx, missing); !backend.IsNotFound(err) {
		t.Errorf("Stat(missing) error = %v, want one IsNotFound accepts", err)
	}
	if err := b.Delete(ctx, missing); err != nil {
		t.Errorf("Delete(missing) = %v, want nil (idempotent)", err)
	}

	key := root + "deleted"
	put(t, b, key, []byte("soon gone"))
	for i := range 2 {
		if err := b.Delete(ctx, key); err != nil {
			t.Fatalf("Delete #%d (%q) = %v, want nil", i+1, key, err)
		}
	}
	if _, err := b.Stat(ctx, key); !backend.IsNotFound(err) {
		t.Errorf("Stat after Delete error = %v, want not found", err)
	}
	if _, err := b.Get(ctx, key); !backend.IsNotFound(err) {
		t.Errorf("Get after Delete error = %v, want not found", err)
	}
}

func mustDelete(t *testing.T, b backend.Backend, key string) {
	t.Helper()
	if err := b.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
}
