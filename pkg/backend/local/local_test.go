package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

func newTestBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(t.Context(), Config{Dir: filepath.Join(t.TempDir(), "store")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAcceptance(t *testing.T) {
	backendtest.AcceptanceTest(t, newTestBackend(t))
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(t.Context(), Config{}); err == nil {
		t.Fatal("New with an empty Dir succeeded, want an error")
	}
}

func TestKeysRejected(t *testing.T) {
	b := newTestBackend(t)
	cases := []struct {
		name string
		key  string
	}{
		{"empty", ""},
		{"leading slash", "/etc/passwd"},
		{"trailing slash", "dir/"},
		{"double slash", "a//b"},
		{"dot segment", "a/./b"},
		{"parent segment", "../outside"},
		{"reserved temp name", "a/" + tmpPrefix + "x"},
		{"NUL", "a\x00b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.Put(t.Context(), tc.key, strings.NewReader("x")); err == nil {
				t.Fatalf("Put(%q) succeeded, want an error", tc.key)
			}
		})
	}
}

func TestListSkipsTempFilesAndDirectories(t *testing.T) {
	b := newTestBackend(t)
	ctx := t.Context()
	if err := b.Put(ctx, "a/b/c", strings.NewReader("c")); err != nil {
		t.Fatal(err)
	}
	// What a crashed upload leaves behind.
	if err := os.WriteFile(filepath.Join(b.root, "a", tmpPrefix+"123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	infos, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Key != "a/b/c" {
		t.Fatalf("List = %+v, want only a/b/c", infos)
	}
	if _, err := b.Stat(ctx, "a/b"); !backend.IsNotFound(err) {
		t.Fatalf("Stat(directory) error = %v, want not found", err)
	}
	if err := b.Delete(ctx, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.root, "a", "b")); !os.IsNotExist(err) {
		t.Fatalf("empty directory a/b left after Delete (stat error %v)", err)
	}
}
