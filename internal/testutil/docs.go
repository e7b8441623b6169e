package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Docs returns the user-facing Markdown of the repository, path relative to the repository's
// root to content: README.md and every .md file under docs/. The docs checks (test/monitoring,
// test/crdvalidation) read what it names against the code.
func Docs(t testing.TB) map[string]string {
	t.Helper()
	root := RepoRoot()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out[rel] = string(data)
	}
	return out
}
