package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const repoRoot = "../../.."

// The committed dashboard only uses metrics (and labels) the operators export.
func TestDashboardMetricsExist(t *testing.T) {
	if err := checkDashboard(repoRoot, filepath.Join(repoRoot, "docs/grafana/etcd-operator-dashboard.json")); err != nil {
		t.Fatal(err)
	}
}

func TestDefinedMetrics(t *testing.T) {
	defined, err := definedMetrics(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]string{
		"etcd_operator_cluster_members":                    "cluster_namespace,cluster,state",
		"etcd_operator_cluster_info":                       "cluster_namespace,cluster,version,target_version", // opmetrics.NewInfoVec
		"etcd_operator_backup_duration_seconds":            "storage",
		"etcd_operator_backend_operation_duration_seconds": "backend,operation",                         // labels from a variable
		"etcd_operator_backup_schedule_suspended":          "cluster_namespace,cluster,schedule",        // prometheus.NewDesc, package-level labels
		"etcd_operator_backup_schedule_last_run_result":    "cluster_namespace,cluster,schedule,result", // append(labels, ...)
		"etcd_operator_build_info":                         "version,revision,goversion,binary",
	} {
		m, ok := defined[name]
		if !ok {
			t.Errorf("%s not found", name)
			continue
		}
		if got := strings.Join(m.labels, ","); got != labels {
			t.Errorf("%s labels %q, want %q", name, got, labels)
		}
	}
}

func TestCheckDashboardRejects(t *testing.T) {
	for name, expr := range map[string]string{
		"unknown metric": `rate(etcd_operator_backup_nonexistent_total[5m])`,
		"old name":       `rate(etcd_backup_failures_total[5m])`,
		"unknown label":  `sum by (bucket) (etcd_operator_backup_failures_total)`,
		"bad matcher":    `etcd_operator_cluster_members{namespace="a"}`,
		"no metric":      `vector(1)`,
		"not histogram":  `etcd_operator_backup_failures_total_bucket`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.json")
			data := `{"panels":[{"targets":[{"expr":` + quote(expr) + `}]}]}`
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkDashboard(repoRoot, path); err == nil {
				t.Fatalf("%s accepted", expr)
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
