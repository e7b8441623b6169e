// Package helmchart tests the Helm chart (charts/etcd-operator) without a cluster, or against an
// envtest kube-apiserver: renders with several value sets, the values schema, and the CRD
// upgrade from the previous chart version with the real helm (hack/helm.sh builds it once).
// test/e2e/helm runs the chart on the local cluster.
package helmchart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// PreviousChartRef is the git commit of the previous chart version, the one upgrades are tested
// from: chart 0.1.0 as of c287046, before the API gained endpointCA (so the upgrade must add
// a field) and while the CRDs were in crds/ (which Helm never upgrades). There is no release
// tag yet; replace it with the tag of the last release once there is one.
// E2E_HELM_PREVIOUS_REF overrides it.
const PreviousChartRef = "c2870460cc11f341879cee42d47da7a0fa4f7ab9"

var chartDir = filepath.Join(testutil.RepoRoot(), "charts", "etcd-operator")

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns $E2E_HELM or the pinned helm of hack/helm.sh (built into bin/ once).
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if h := os.Getenv("E2E_HELM"); h != "" {
			helmPath = h
			return
		}
		cmd := exec.Command(filepath.Join(testutil.RepoRoot(), "hack", "helm.sh"), "install")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		helmPath, helmErr = strings.TrimSpace(string(out)), err
	})
	if helmErr != nil {
		t.Fatalf("hack/helm.sh install: %v", helmErr)
	}
	return helmPath
}

// runHelm runs helm with args (and KUBECONFIG=kubeconfig if set) and returns its output.
func runHelm(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// previousChart extracts the previous chart version from git history into a temporary
// directory and returns the chart's path; the test is skipped when the clone lacks that commit.
func previousChart(t *testing.T) string {
	t.Helper()
	ref := PreviousChartRef
	if r := os.Getenv("E2E_HELM_PREVIOUS_REF"); r != "" {
		ref = r
	}
	root := testutil.RepoRoot()
	if err := exec.Command("git", "-C", root, "cat-file", "-e", ref+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s of the previous chart is not in this clone (shallow?): %v", ref, err)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", ref, "charts/etcd-operator")
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s charts/etcd-operator: %v\n%s", ref, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v\n%s", err, stderr.String())
	}
	return filepath.Join(dir, "charts", "etcd-operator")
}

// object is the part of a rendered object the tests read; Raw is the whole object.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Raw map[string]any `json:"-"`
}

// render runs helm template on the working tree's chart with the --set values and returns the
// objects, or the error output.
func render(t *testing.T, set ...string) ([]object, string, error) {
	t.Helper()
	args := []string{"template", "eo", chartDir, "--namespace", "ops"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, "", args...)
	if err != nil {
		return nil, out, err
	}
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered document does not parse: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue
		}
		if err := yaml.Unmarshal([]byte(doc), &o.Raw); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs, out, nil
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}
