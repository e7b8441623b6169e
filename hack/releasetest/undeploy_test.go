package releasetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubKubectl records every call and the kinds of every manifest piped to `delete -f -`, answers
// the custom resource listing with one EtcdCluster, and renders with the built kubectl's
// kustomize (or the one on PATH).
const stubKubectl = `#!/usr/bin/env bash
echo "$*" >>"$STUB_LOG"
case "$*" in
  kustomize*) exec "$REAL_KUBECTL" "$@" ;;
  "get etcdclusters."*) echo "EtcdCluster team-a prod" ;;
  "get "*) exit 0 ;;
  "delete "*"-f -"*) grep '^kind:' | sed 's/^/  piped /' >>"$STUB_LOG" ;;
  config*) echo https://cluster.example:6443 ;;
esac
`

// TestUndeploy runs hack/deploy.sh delete against a recording kubectl: by default it deletes
// the operators' Deployments, RBAC and namespace but no CRD and no custom resource, and names
// the custom resources DELETE_CRDS=yes would delete; with DELETE_CRDS=yes it deletes the custom
// resources, then the CRDs with the rest.
func TestUndeploy(t *testing.T) {
	real := filepath.Join(repoRoot(), ".cache", "bin", "k8s-v1.33.13", "kubectl")
	if _, err := os.Stat(real); err != nil {
		if real, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("no kubectl to render with: hack/build-k8s.sh kubectl")
		}
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(stub, []byte(stubKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, env ...string) (calls, out string) {
		t.Helper()
		log := filepath.Join(t.TempDir(), "calls")
		cmd := exec.CommandContext(t.Context(), filepath.Join(repoRoot(), "hack", "deploy.sh"), "delete")
		cmd.Env = append(os.Environ(), append(env, "KUBECTL="+stub, "REAL_KUBECTL="+real, "STUB_LOG="+log,
			"KUBECONFIG="+filepath.Join(dir, "kubeconfig"), "IMG=registry.example.com/etcd-operator:v1")...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("hack/deploy.sh delete: %v\n%s", err, b)
		}
		c, _ := os.ReadFile(log)
		return string(c), string(b)
	}

	t.Run("default keeps CRDs and custom resources", func(t *testing.T) {
		calls, out := run(t, "DELETE_CRDS=")
		if strings.Contains(calls, "--all-namespaces --ignore-not-found") || strings.Contains(calls, "piped kind: CustomResourceDefinition") {
			t.Errorf("deleted custom resources or CRDs:\n%s", calls)
		}
		for _, kind := range []string{"Deployment", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Namespace"} {
			if !strings.Contains(calls, "piped kind: "+kind+"\n") {
				t.Errorf("did not delete the %ss:\n%s", kind, calls)
			}
		}
		if !strings.Contains(out, "EtcdCluster team-a/prod") || !strings.Contains(out, "DELETE_CRDS=yes would delete") {
			t.Errorf("did not list what DELETE_CRDS=yes would delete:\n%s", out)
		}
	})
	t.Run("DELETE_CRDS=yes deletes them", func(t *testing.T) {
		calls, _ := run(t, "DELETE_CRDS=yes")
		crs := strings.Index(calls, "delete etcdclusters.etcd.database.coreos.com --all --all-namespaces")
		crds := strings.Index(calls, "piped kind: CustomResourceDefinition")
		if crs < 0 || crds < 0 || crs > crds {
			t.Errorf("want the custom resources deleted, then the CRDs:\n%s", calls)
		}
	})
}
