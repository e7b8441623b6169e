package monitoring

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// metricsDoc is where every metric the operators export is described.
const metricsDoc = "docs/monitoring.md"

// metricName is a metric of the operators as the docs write it, whole: a family the docs name
// by its prefix ("etcd_operator_backup_*", "etcd_operator_drill_last_") does not match, as the
// name must end at a word boundary with a letter or digit.
var metricName = regexp.MustCompile(`\betcd_operator_[a-z0-9_]*[a-z0-9]\b`)

// docMetrics returns, for every Markdown file of the README and docs/, the metric names it
// writes.
func docMetrics(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rel, text := range testutil.Docs(t) {
		for _, m := range metricName.FindAllString(text, -1) {
			if !slices.Contains(out[rel], m) {
				out[rel] = append(out[rel], m)
			}
		}
	}
	return out
}

// TestDocsNameOnlyExportedMetrics (issue 33 item 5): every metric the README and docs/ name is
// one the operators export (a histogram's _bucket, _sum and _count series included), so a
// renamed or removed metric cannot linger in a runbook or an example query.
func TestDocsNameOnlyExportedMetrics(t *testing.T) {
	m := exported(t)
	named := 0
	for file, names := range docMetrics(t) {
		for _, n := range names {
			named++
			if _, ok := m[n]; !ok {
				t.Errorf("%s names %s, which no operator exports", file, n)
			}
		}
	}
	if named < 20 {
		t.Fatalf("found only %d metric names in the docs: is the pattern still right?", named)
	}
}

// TestEveryMetricDocumented (issue 33 item 5): every metric the operators export is described in
// docs/monitoring.md (a histogram by its base name).
func TestEveryMetricDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), metricsDoc))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, n := range metricName.FindAllString(string(data), -1) {
		documented[n] = true
	}
	for name := range exported(t) {
		base := name
		for _, s := range histogramSuffixes {
			base = strings.TrimSuffix(base, s)
		}
		if base != name {
			continue // a histogram's series: its base name is checked
		}
		if !documented[name] {
			t.Errorf("%s is exported but not described in %s", name, metricsDoc)
		}
	}
}
