package helmchart

import (
	"bytes"
	"context"
	"errors"
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
	bin := helm(t) // a cold build of helm takes minutes: not on the command's clock
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
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
	dir, err := ExtractPrevious(t.Context(), testutil.RepoRoot(), t.TempDir())
	if errors.Is(err, ErrNoHistory) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
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
