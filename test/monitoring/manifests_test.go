package monitoring

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// copies are files generated from a source by `make helm-gen` (hack/helm.sh gen): the kustomize
// Component and the chart cannot read files outside their own directory.
var copies = map[string]string{
	"manifests/monitoring/etcd-operator-dashboard.json":                  dashboardFile,
	"charts/etcd-operator/files/monitoring/etcd-operator-dashboard.json": dashboardFile,
	"charts/etcd-operator/files/monitoring/prometheusrule.yaml":          rulesFile,
}

// TestCopiesUpToDate: the dashboard and rules shipped by kustomize and Helm are the checked ones.
func TestCopiesUpToDate(t *testing.T) {
	root := testutil.RepoRoot()
	for cp, src := range copies {
		a, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, cp))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run make helm-gen", cp, src)
		}
	}
}

// TestKustomizeMonitoringComponent builds an overlay of manifests/ with the monitoring
// Component, as docs/monitoring.md tells users to: the result has the three metrics Services,
// the ServiceMonitor selecting them, the PodMonitor of the etcd members, the PrometheusRule and
// the dashboard ConfigMap labelled for Grafana's sidecar; manifests/ alone has no
// monitoring.coreos.com object (it installs where the Prometheus Operator is absent).
func TestKustomizeMonitoringComponent(t *testing.T) {
	kubectl := findKubectl(t)
	root := testutil.RepoRoot()
	overlay := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(overlay, filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + rel("manifests") +
		"]\ncomponents: [" + rel("manifests/monitoring") + "]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	with := build(t, kubectl, overlay)
	count := map[string]int{}
	for _, o := range with {
		count[o.Kind]++
		switch o.Kind {
		case "ConfigMap":
			if o.Metadata.Labels["grafana_dashboard"] != "1" || !strings.Contains(o.Data["etcd-operator-dashboard.json"], "etcd_operator_cluster_members") {
				t.Errorf("dashboard ConfigMap %s: labels %v, keys %d", o.Metadata.Name, o.Metadata.Labels, len(o.Data))
			}
		case "Service":
			if o.Metadata.Labels["app.kubernetes.io/component"] != "metrics" {
				t.Errorf("Service %s is not labelled as a metrics Service", o.Metadata.Name)
			}
		}
	}
	for kind, n := range map[string]int{"Service": 3, "ServiceMonitor": 1, "PodMonitor": 1, "PrometheusRule": 1, "ConfigMap": 1, "Deployment": 3} {
		if count[kind] != n {
			t.Errorf("overlay with the Component: %d %s, want %d (all: %v)", count[kind], kind, n, count)
		}
	}
	for _, o := range build(t, kubectl, filepath.Join(root, "manifests")) {
		if strings.HasPrefix(o.APIVersion, "monitoring.coreos.com/") {
			t.Errorf("manifests/ without the Component has a %s", o.Kind)
		}
	}
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func build(t *testing.T, kubectl, dir string) []object {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", dir).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	var objs []object
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// findKubectl returns $KUBECTL, the kubectl hack/build-k8s.sh built into .cache/bin, or the one
// on PATH; the test is skipped without one.
func findKubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if m, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), ".cache", "bin", "k8s-*", "kubectl")); len(m) > 0 {
		return m[len(m)-1]
	}
	if k, err := exec.LookPath("kubectl"); err == nil {
		return k
	}
	t.Skip("no kubectl (set KUBECTL, or run hack/build-k8s.sh) for kubectl kustomize")
	return ""
}
