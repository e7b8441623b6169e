package backendtest

import (
	"slices"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

func testPrefix(t *testing.T, b backend.Backend, root string) {
	ctx := t.Context()
	p := backend.WithPrefix(b, "/"+root+"prefixed/")
	inner := root + "prefixed/"
	keys := []string{"a/one", "a/two", "b/three"}
	for _, k := range keys {
		put(t, p, k, []byte(k))
	}

	if info, err := b.Stat(ctx, inner+"a/one"); err != nil || info.Size != int64(len("a/one")) {
		t.Fatalf("inner Stat(%q) = %+v, %v; want the object written through the prefix", inner+"a/one", info, err)
	}
	if info, err := p.Stat(ctx, "a/one"); err != nil || info.Key != "a/one" {
		t.Fatalf("prefixed Stat(a/one) = %+v, %v; want key a/one", info, err)
	}
	if gotSum, _ := get(t, p, "b/three"); gotSum != sum([]byte("b/three")) {
		t.Fatalf("prefixed Get(b/three) returned other content")
	}
	rc, err := p.GetRange(ctx, "a/two", 2, 3)
	if err != nil {
		t.Fatalf("prefixed GetRange: %v", err)
	}
	if gotSum, _ := readAll(t, rc); gotSum != sum([]byte("two")) {
		t.Fatalf("prefixed GetRange(a/two, 2, 3) did not return %q", "two")
	}
	if _, err := p.Get(ctx, "missing"); !backend.IsNotFound(err) {
		t.Fatalf("prefixed Get(missing) error = %v, want not found", err)
	}

	cases := []struct {
		prefix string
		want   []string
	}{
		{"", keys},
		{"a/", keys[:2]},
		{"b", keys[2:]},
		{"c", nil},
	}
	for _, tc := range cases {
		infos, err := p.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("prefixed List(%q): %v", tc.prefix, err)
		}
		var got []string
		for _, info := range infos {
			got = append(got, info.Key)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("prefixed List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}

	for _, k := range keys {
		mustDelete(t, p, k)
	}
	if infos, err := b.List(ctx, inner); err != nil || len(infos) != 0 {
		t.Fatalf("inner List(%q) after deleting through the prefix = %d objects, %v; want none", inner, len(infos), err)
	}
}

// testClean checks that the whole run, failed uploads included, left nothing behind.
func testClean(t *testing.T, b backend.Backend, root string) {
	infos, err := b.List(t.Context(), root)
	if err != nil {
		t.Fatalf("List(%q): %v", root, err)
	}
	for _, info := range infos {
		t.Errorf("left behind: %q (%d bytes)", info.Key, info.Size)
	}
}
