package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// metric is one Prometheus metric the code defines.
type metric struct {
	kind   string // Counter, Gauge, Histogram, Summary
	labels []string
}

// controllerRuntimeMetrics are exported by controller-runtime itself on the same endpoint; the
// dashboard may use these few.
var controllerRuntimeMetrics = map[string]metric{
	"controller_runtime_reconcile_total":        {"Counter", []string{"controller", "result"}},
	"controller_runtime_reconcile_errors_total": {"Counter", []string{"controller"}},
	"controller_runtime_reconcile_time_seconds": {"Histogram", []string{"controller"}},
	"workqueue_depth":                           {"Gauge", []string{"controller", "name"}},
}

// Labels any series has once scraped, plus the histogram bucket label.
var scrapeLabels = []string{"job", "instance", "pod", "le", "container", "endpoint", "service"}

var (
	metricToken = regexp.MustCompile(`\b(etcd_[a-z0-9_]+|controller_runtime_[a-z0-9_]+|workqueue_[a-z0-9_]+)\b`)
	matcher     = regexp.MustCompile(`\{([^}]*)\}`)
	labelName   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)`)
	grouping    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// definedMetrics finds every metric defined in the non-test Go files under root/internal and
// root/pkg: calls whose first argument is prometheus.<Kind>Opts{Name: "..."} (NewGaugeVec,
// opmetrics.NewInfoVec, ...) with the labels that follow, and prometheus.NewDesc("name", help,
// labels) of collectors.
func definedMetrics(root string) (map[string]metric, error) {
	out := map[string]metric{}
	for _, dir := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			vars := map[string][]string{} // labels := []string{...} and var labels = []string{...}
			ast.Inspect(f, func(n ast.Node) bool {
				switch t := n.(type) {
				case *ast.AssignStmt:
					if len(t.Lhs) == len(t.Rhs) {
						for i, l := range t.Lhs {
							if id, ok := l.(*ast.Ident); ok {
								if s := stringList(t.Rhs[i], nil); s != nil {
									vars[id.Name] = s
								}
							}
						}
					}
				case *ast.ValueSpec:
					if len(t.Names) == len(t.Values) {
						for i, id := range t.Names {
							if s := stringList(t.Values[i], nil); s != nil {
								vars[id.Name] = s
							}
						}
					}
				}
				return true
			})
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				// prometheus.NewDesc("name", help, labels, ...): a collector's metric, a gauge here.
				if exprString(call.Fun) == "prometheus.NewDesc" && len(call.Args) >= 3 {
					if bl, ok := call.Args[0].(*ast.BasicLit); ok {
						name, _ := strconv.Unquote(bl.Value)
						out[name] = metric{kind: "Gauge", labels: stringList(call.Args[2], vars)}
					}
					return true
				}
				// <any constructor>(prometheus.<Kind>Opts{Name: "..."}, labels): prometheus.NewGaugeVec
				// and the like, and wrappers such as opmetrics.NewInfoVec.
				lit, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					return true
				}
				opts := exprString(lit.Type)
				if !strings.HasPrefix(opts, "prometheus.") || !strings.HasSuffix(opts, "Opts") {
					return true
				}
				kind := strings.TrimSuffix(strings.TrimPrefix(opts, "prometheus."), "Opts")
				for _, el := range lit.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok || exprString(kv.Key) != "Name" {
						continue
					}
					bl, ok := kv.Value.(*ast.BasicLit)
					if !ok {
						continue
					}
					name, _ := strconv.Unquote(bl.Value)
					m := metric{kind: kind}
					if len(call.Args) > 1 {
						m.labels = stringList(call.Args[1], vars)
					}
					out[name] = m
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func stringList(e ast.Expr, vars map[string][]string) []string {
	switch t := e.(type) {
	case *ast.Ident:
		return vars[t.Name]
	case *ast.CallExpr: // append(labels, "more", ...)
		if exprString(t.Fun) != "append" || len(t.Args) == 0 {
			return nil
		}
		out := append([]string{}, stringList(t.Args[0], vars)...)
		for _, a := range t.Args[1:] {
			if bl, ok := a.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(bl.Value)
				out = append(out, s)
			}
		}
		return out
	case *ast.CompositeLit:
		if at, ok := t.Type.(*ast.ArrayType); !ok || exprString(at.Elt) != "string" {
			return nil
		}
		out := []string{}
		for _, el := range t.Elts {
			if bl, ok := el.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(bl.Value)
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// checkDashboard fails unless every metric a query of the dashboard names is defined in the
// code (or is one of controllerRuntimeMetrics) and every label it matches or groups by belongs
// to one of the metrics of that query.
func checkDashboard(root, path string) error {
	defined, err := definedMetrics(root)
	if err != nil {
		return err
	}
	if len(defined) == 0 {
		return fmt.Errorf("no metric definitions found under %s", root)
	}
	for k, v := range controllerRuntimeMetrics {
		defined[k] = v
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	exprs := collectExprs(doc, nil)
	if len(exprs) == 0 {
		return fmt.Errorf("%s has no queries", path)
	}
	var problems []string
	used := map[string]bool{}
	for _, expr := range exprs {
		labels := map[string]bool{}
		for _, l := range scrapeLabels {
			labels[l] = true
		}
		names := metricToken.FindAllString(expr, -1)
		if len(names) == 0 {
			problems = append(problems, fmt.Sprintf("query %q names no metric of the operators", expr))
		}
		for _, n := range names {
			m, ok := lookup(defined, n)
			if !ok {
				problems = append(problems, fmt.Sprintf("query %q: metric %s is not exported by the operators", expr, n))
				continue
			}
			used[n] = true
			for _, l := range m.labels {
				labels[l] = true
			}
		}
		var inExpr []string
		for _, sm := range matcher.FindAllStringSubmatch(expr, -1) {
			for _, lm := range labelName.FindAllStringSubmatch(sm[1], -1) {
				inExpr = append(inExpr, lm[1])
			}
		}
		for _, sm := range grouping.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(sm[1], ",") {
				if l = strings.TrimSpace(l); l != "" {
					inExpr = append(inExpr, l)
				}
			}
		}
		for _, l := range inExpr {
			if !labels[l] {
				problems = append(problems, fmt.Sprintf("query %q: label %s is not a label of its metrics", expr, l))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	return nil
}

// lookup finds a metric by name, also as a histogram's _bucket, _sum or _count series.
func lookup(defined map[string]metric, name string) (metric, bool) {
	if m, ok := defined[name]; ok {
		return m, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := defined[base]; ok && (m.kind == "Histogram" || m.kind == "Summary") {
				return m, true
			}
		}
	}
	return metric{}, false
}

// collectExprs returns every "expr" string (panel targets) and every "query" of a Prometheus
// templating variable (label_values(...)) in the dashboard.
func collectExprs(v any, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := t[k].(string); ok && (k == "expr" || (k == "query" && strings.Contains(s, "label_values("))) {
				out = append(out, s)
				continue
			}
			out = collectExprs(t[k], out)
		}
	case []any:
		for _, e := range t {
			out = collectExprs(e, out)
		}
	}
	return out
}
