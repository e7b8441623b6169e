package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// Files checked, relative to the repository root.
const (
	rulesFile     = "manifests/monitoring/prometheusrule.yaml"
	dashboardFile = "docs/grafana/etcd-operator-dashboard.json"
)

// scrapeLabels are set by Prometheus (and the Prometheus Operator) on every scraped series.
var scrapeLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true,
	"service": true, "container": true, "endpoint": true, "le": true}

// foreign are metrics the rules or the dashboard may use that other components export.
var foreign = map[string][]string{
	// controller-runtime, on the same endpoint as the operators' metrics.
	"controller_runtime_reconcile_total":        {"controller", "result"},
	"controller_runtime_reconcile_errors_total": {"controller"},
	"controller_runtime_reconcile_time_seconds": {"controller"},
	"workqueue_depth":                           {"controller", "name"},
	// etcd's own, from the member pods (EtcdDatabaseNearQuota; docs/monitoring.md).
	"etcd_mvcc_db_total_size_in_bytes": {},
	"etcd_server_quota_backend_bytes":  {},
}

// TestPrometheusRule: the PrometheusRule's groups pass `promtool check rules` (the same
// parser: rule names, durations, label and annotation templates, PromQL), every alert has a
// severity, summary, description and runbook, and every metric and label the expressions
// name is exported (the operators' metrics from their registration code).
func TestPrometheusRule(t *testing.T) {
	groups := parseRules(t, filepath.Join(testutil.RepoRoot(), rulesFile))
	metrics := known(t)
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			alerts++
			for _, p := range checkExpr(r.Expr, metrics) {
				t.Errorf("%s: %s", name, p)
			}
			if r.Alert == "" {
				continue
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", name, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", name, a)
				}
			}
		}
	}
	want := []string{"EtcdClusterQuorumLost", "EtcdClusterMemberDown", "EtcdBackupStale", "EtcdRestoreFailed", "EtcdRestoreDrillFailed", "EtcdDatabaseNearQuota"}
	for _, w := range want {
		if !hasAlert(groups, w) {
			t.Errorf("no alert %s", w)
		}
	}
	t.Logf("%d rules in %d groups checked", alerts, len(groups.Groups))
}

// TestDashboardQueries: every query of the Grafana dashboard is valid PromQL (with Grafana's
// variables filled in) and names only exported metrics and their labels.
func TestDashboardQueries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	metrics := known(t)
	exprs := dashboardExprs(doc, nil)
	if len(exprs) < 20 {
		t.Fatalf("only %d queries found", len(exprs))
	}
	for _, e := range exprs {
		for _, p := range checkExpr(e, metrics) {
			t.Errorf("query %q: %s", e, p)
		}
	}
	t.Logf("%d dashboard queries checked", len(exprs))
}

// TestCheckExprRejects: the check catches what it is for.
func TestCheckExprRejects(t *testing.T) {
	metrics := known(t)
	for name, expr := range map[string]string{
		"syntax":                             `sum by (cluster (etcd_operator_cluster_members)`,
		"old metric name":                    `etcd_backup_last_success_timestamp_seconds`,
		"unknown metric":                     `etcd_operator_cluster_nonexistent`,
		"label of the scrape":                `etcd_operator_cluster_members{name="c"}`,
		"grouping by unknown":                `sum by (bucket) (etcd_operator_backup_failures_total)`,
		"matching on unknown":                `etcd_operator_cluster_members * on (node) etcd_operator_cluster_desired_members`,
		"bucket of a gauge":                  `etcd_operator_cluster_members_bucket`,
		"grouping by unknown in a histogram": `histogram_quantile(0.9, sum by (le, storage, bogus) (rate(etcd_operator_backup_duration_seconds_bucket[5m])))`,
	} {
		if len(checkExpr(expr, metrics)) == 0 {
			t.Errorf("%s: %s accepted", name, expr)
		}
	}
	if p := checkExpr(`histogram_quantile(0.9, sum by (le, storage) (rate(etcd_operator_backup_duration_seconds_bucket[5m])))`, metrics); len(p) != 0 {
		t.Errorf("a valid histogram query rejected: %v", p)
	}
}

// parseRules reads a PrometheusRule manifest and parses its spec (the groups) with rulefmt.
func parseRules(t *testing.T, path string) *rulefmt.RuleGroups {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Kind != "PrometheusRule" {
		t.Fatalf("%s: kind %q", path, obj.Kind)
	}
	spec, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false)
	for _, e := range errs {
		t.Errorf("%s: %v", path, e)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", path)
	}
	return groups
}

func hasAlert(g *rulefmt.RuleGroups, name string) bool {
	for _, gr := range g.Groups {
		for _, r := range gr.Rules {
			if r.Alert == name {
				return true
			}
		}
	}
	return false
}

// known is every metric a query may name, with its labels.
func known(t *testing.T) map[string][]string {
	m := exported(t)
	for k, v := range foreign {
		m[k] = v
	}
	return m
}

// checkExpr parses expr and returns its problems: a parse error, a metric nobody exports, a
// label matcher, grouping or vector-matching label that none of the expression's metrics has.
func checkExpr(expr string, metrics map[string][]string) []string {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	have := map[string]bool{}
	for l := range scrapeLabels {
		have[l] = true
	}
	var used []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		ls, ok := metrics[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %q is not exported", name))
			return nil
		}
		for _, l := range ls {
			have[l] = true
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				used = append(used, m.Name)
			}
		}
		return nil
	})
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch t := n.(type) {
		case *parser.AggregateExpr:
			used = append(used, t.Grouping...)
		case *parser.BinaryExpr:
			if t.VectorMatching != nil {
				used = append(used, t.VectorMatching.MatchingLabels...)
			}
		}
		return nil
	})
	for _, l := range used {
		if !have[l] {
			problems = append(problems, fmt.Sprintf("label %q is not a label of its metrics", l))
		}
	}
	sort.Strings(problems)
	return slices.Compact(problems)
}

// grafanaVars fills in the dashboard's variables so that its queries parse as PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$cluster", ".*")

// dashboardExprs returns the panel queries (expr) and the PromQL inside label_values(...)
// variable queries of a Grafana dashboard.
func dashboardExprs(v any, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := t[k].(string)
			switch {
			case ok && k == "expr":
				out = append(out, grafanaVars.Replace(s))
			case ok && k == "query" && strings.HasPrefix(s, "label_values("):
				// label_values(<selector>, <label>): the selector is PromQL.
				inner := strings.TrimSuffix(strings.TrimPrefix(s, "label_values("), ")")
				if i := strings.LastIndex(inner, ","); i > 0 {
					sel, label := inner[:i], strings.TrimSpace(inner[i+1:])
					out = append(out, grafanaVars.Replace(fmt.Sprintf("count by (%s) (%s)", label, sel)))
				}
			default:
				out = dashboardExprs(t[k], out)
			}
		}
	case []any:
		for _, e := range t {
			out = dashboardExprs(e, out)
		}
	}
	return out
}
