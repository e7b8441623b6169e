package benchutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteResults writes a bench's markdown to out and, when v is not nil, v as indented JSON next to
// it (out with .json for .md). It creates out's directory first: on a fresh clone the results
// directory under the ignored .cache does not exist yet, and a bench that ran for many minutes must
// not lose its figures to a missing directory.
func WriteResults(out, markdown string, v any) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("creating the results directory: %w", err)
	}
	if err := os.WriteFile(out, []byte(markdown), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if v == nil {
		return nil
	}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the JSON results: %w", err)
	}
	js := strings.TrimSuffix(out, ".md") + ".json"
	if err := os.WriteFile(js, raw, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", js, err)
	}
	return nil
}
