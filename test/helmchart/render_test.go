package helmchart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// TestChartRender renders the chart with several value sets:
//   - by default the four CRDs are part of the release, identical in spec to manifests/crd and
//     kept on uninstall (helm.sh/resource-policy: keep); crds.keep=false drops the annotation,
//     crds.install=false the CRDs;
//   - a metrics Service per operator selects that operator's pods on its metrics port;
//   - nothing of the Prometheus Operator by default; with metrics.*.enabled a ServiceMonitor
//     selecting the metrics Services, a PodMonitor of the etcd members, the PrometheusRule of
//     manifests/monitoring and the dashboard of docs/grafana as a ConfigMap labelled for Grafana.
func TestChartRender(t *testing.T) {
	root := testutil.RepoRoot()
	tests := []struct {
		name  string
		set   []string
		check func(t *testing.T, objs []object)
	}{
		{"defaults", nil, func(t *testing.T, objs []object) {
			checkCRDs(t, ofKind(objs, "CustomResourceDefinition"), true)
			checkMetricsServices(t, objs)
			for _, o := range objs {
				if strings.HasPrefix(o.APIVersion, "monitoring.coreos.com/") || o.Kind == "ConfigMap" {
					t.Errorf("default render has %s %s", o.Kind, o.Metadata.Name)
				}
			}
		}},
		{"crds.keep=false", []string{"crds.keep=false"}, func(t *testing.T, objs []object) {
			checkCRDs(t, ofKind(objs, "CustomResourceDefinition"), false)
		}},
		{"crds.install=false", []string{"crds.install=false"}, func(t *testing.T, objs []object) {
			if n := len(ofKind(objs, "CustomResourceDefinition")); n != 0 {
				t.Errorf("%d CRDs rendered", n)
			}
		}},
		{"monitoring", []string{"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
			"metrics.dashboard.enabled=true", "metrics.dashboard.namespace=grafana", "metrics.serviceMonitor.labels.release=kps"}, func(t *testing.T, objs []object) {
			sm := one(t, objs, "ServiceMonitor")
			if sm.Metadata.Labels["release"] != "kps" {
				t.Errorf("ServiceMonitor labels %v, want release=kps", sm.Metadata.Labels)
			}
			sel := sm.Raw["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
			services := 0
			for _, s := range ofKind(objs, "Service") {
				if matches(sel, s.Metadata.Labels) {
					services++
				}
			}
			if services != 3 {
				t.Errorf("the ServiceMonitor selects %d Services, want the 3 metrics Services", services)
			}
			one(t, objs, "PodMonitor")
			var want struct {
				Spec any `json:"spec"`
			}
			readYAML(t, filepath.Join(root, "manifests/monitoring/prometheusrule.yaml"), &want)
			if got := one(t, objs, "PrometheusRule").Raw["spec"]; !reflect.DeepEqual(got, want.Spec) {
				t.Errorf("PrometheusRule spec differs from manifests/monitoring/prometheusrule.yaml")
			}
			cm := one(t, objs, "ConfigMap")
			dashboard, err := os.ReadFile(filepath.Join(root, "docs/grafana/etcd-operator-dashboard.json"))
			if err != nil {
				t.Fatal(err)
			}
			data := cm.Raw["data"].(map[string]any)["etcd-operator-dashboard.json"]
			if cm.Metadata.Labels["grafana_dashboard"] != "1" || cm.Metadata.Namespace != "grafana" || data != strings.TrimRight(string(dashboard), "\n") {
				t.Errorf("dashboard ConfigMap %s/%s labels %v, data equal to docs/grafana: %v", cm.Metadata.Namespace, cm.Metadata.Name,
					cm.Metadata.Labels, data == strings.TrimRight(string(dashboard), "\n"))
			}
		}},
		{"excludeNamespaces", []string{`excludeNamespaces=team-a\,team-b`}, everyOperatorHas("--exclude-namespace=team-a,team-b")},
		{"kubernetesClusterID", []string{`kubernetesClusterID=prod east`}, everyOperatorHas("--kubernetes-cluster-id=prod east")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, out, err := render(t, tt.set...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			tt.check(t, objs)
		})
	}
}

// TestExcludeNeedsClusterWideRelease: excludeNamespaces next to watchNamespace fails the
// render with the way out, as the operators refuse the two flags together.
func TestExcludeNeedsClusterWideRelease(t *testing.T) {
	_, out, err := render(t, "excludeNamespaces=team-a", "watchNamespace=team-b")
	if err == nil || !strings.Contains(out, "excludeNamespaces applies to a cluster-wide release only") {
		t.Fatalf("rendered (%v) without the refusal:\n%s", err, out)
	}
}

// containerArgs is the args of a Deployment's first container.
func containerArgs(d object) []string {
	var out []string
	spec, _ := d.Raw["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		return nil
	}
	args, _ := containers[0].(map[string]any)["args"].([]any)
	for _, a := range args {
		out = append(out, fmt.Sprint(a))
	}
	return out
}

// TestValuesSchema: values.schema.json accepts the chart's defaults (every default value is
// described: the schema allows no other property) and makes install fail on a wrong type or an
// unknown value, naming the value.
func TestValuesSchema(t *testing.T) {
	if _, out, err := render(t); err != nil {
		t.Fatalf("defaults rejected: %v\n%s", err, out)
	}
	for _, set := range []string{
		"metricsPort=abc",
		"crds.install=maybe",
		"crds.kepp=true",
		"etcdOperator.replicaCount=-1",
		"image.pullPolicy=Sometimes",
		"metrics.serviceMonitor.interval=often",
		"backupOperator.resources.limits=1",
		"restoreOperator.watchNamespace[0]=a",
	} {
		t.Run(set, func(t *testing.T) {
			_, out, err := render(t, set)
			if err == nil {
				t.Fatalf("--set %s accepted", set)
			}
			key := strings.Split(strings.Split(set, "=")[0], "[")[0]
			key = key[strings.LastIndex(key, ".")+1:]
			if !strings.Contains(out, "schema") || !strings.Contains(out, key) {
				t.Errorf("--set %s failed without naming %s in a schema error:\n%s", set, key, out)
			}
		})
	}
}

// checkCRDs: the rendered CRDs are those of manifests/crd (same spec), with or without keep.
func checkCRDs(t *testing.T, crds []object, keep bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "manifests", "crd", "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("manifests/crd: %v %v", files, err)
	}
	if len(crds) != len(files) {
		t.Fatalf("%d CRDs rendered, want %d", len(crds), len(files))
	}
	byName := map[string]object{}
	for _, c := range crds {
		byName[c.Metadata.Name] = c
		if got := c.Metadata.Annotations["helm.sh/resource-policy"] == "keep"; got != keep {
			t.Errorf("CRD %s: keep annotation %v, want %v", c.Metadata.Name, got, keep)
		}
	}
	for _, f := range files {
		var want struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     any                   `json:"spec"`
		}
		readYAML(t, f, &want)
		got, ok := byName[want.Metadata.Name]
		if !ok {
			t.Errorf("CRD %s not rendered", want.Metadata.Name)
			continue
		}
		a, _ := json.Marshal(got.Raw["spec"])
		b, _ := json.Marshal(want.Spec)
		if string(a) != string(b) {
			t.Errorf("rendered CRD %s differs from %s", want.Metadata.Name, f)
		}
	}
}

// checkMetricsServices: one metrics Service per operator, selecting exactly that operator's
// Deployment's pods, on the container port named metrics.
func checkMetricsServices(t *testing.T, objs []object) {
	t.Helper()
	services := ofKind(objs, "Service")
	deployments := ofKind(objs, "Deployment")
	if len(services) != 3 || len(deployments) != 3 {
		t.Fatalf("%d Services and %d Deployments, want 3 and 3", len(services), len(deployments))
	}
	for _, s := range services {
		spec := s.Raw["spec"].(map[string]any)
		sel := spec["selector"].(map[string]any)
		port := spec["ports"].([]any)[0].(map[string]any)
		selected := 0
		for _, d := range deployments {
			tmpl := d.Raw["spec"].(map[string]any)["template"].(map[string]any)
			labels := map[string]string{}
			for k, v := range tmpl["metadata"].(map[string]any)["labels"].(map[string]any) {
				labels[k] = v.(string)
			}
			if matches(sel, labels) {
				selected++
				if !strings.Contains(toJSON(tmpl), `"name":"metrics"`) {
					t.Errorf("Service %s targets port metrics, which Deployment %s lacks", s.Metadata.Name, d.Metadata.Name)
				}
			}
		}
		if selected != 1 || port["name"] != "metrics" || port["targetPort"] != "metrics" || s.Metadata.Labels["app.kubernetes.io/component"] != "metrics" {
			t.Errorf("Service %s selects %d Deployments, port %v, labels %v", s.Metadata.Name, selected, port, s.Metadata.Labels)
		}
	}
}

func matches(selector map[string]any, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func one(t *testing.T, objs []object, kind string) object {
	t.Helper()
	l := ofKind(objs, kind)
	if len(l) != 1 {
		t.Fatalf("%d %s rendered, want 1", len(l), kind)
	}
	return l[0]
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// everyOperatorHas checks that the three operator Deployments are rendered, each with arg.
func everyOperatorHas(arg string) func(*testing.T, []object) {
	return func(t *testing.T, objs []object) {
		deps := ofKind(objs, "Deployment")
		if len(deps) != 3 {
			t.Fatalf("%d Deployments rendered, want 3", len(deps))
		}
		for _, d := range deps {
			if args := containerArgs(d); !slices.Contains(args, arg) {
				t.Errorf("Deployment %s args %v lack %s", d.Metadata.Name, args, arg)
			}
		}
	}
}
