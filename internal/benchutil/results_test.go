package benchutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A fresh clone has no .cache/bench: the results land anyway (CI of a fresh clone failed on this).
func TestWriteResultsCreatesTheDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "not", "there", "smoke.md")
	if err := WriteResults(out, "# table\n", map[string]int{"runs": 1}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil || string(md) != "# table\n" {
		t.Fatalf("markdown: %q, %v", md, err)
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(out), "smoke.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := json.Unmarshal(raw, &got); err != nil || got["runs"] != 1 {
		t.Fatalf("json: %s, %v", raw, err)
	}
}
