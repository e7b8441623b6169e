// Package helmchart tests the Helm chart (charts/etcd-operator) without a cluster, or against an
// envtest kube-apiserver: renders with several value sets, the values schema, and the CRD
// upgrade from the previous chart version with the real helm (hack/helm.sh builds it once).
// test/e2e/helm runs the chart on the local cluster and uses ExtractPrevious too.
package helmchart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// PreviousChartRef is the git commit of the previous chart version, the one upgrades are tested
// from: chart 0.1.0 as of c287046, before the API gained endpointCA (so the upgrade must add
// a field) and while the CRDs were in crds/ (which Helm never upgrades). There is no release
// tag yet; replace it with the tag of the last release once there is one.
// E2E_HELM_PREVIOUS_REF overrides it.
const PreviousChartRef = "c2870460cc11f341879cee42d47da7a0fa4f7ab9"

// ErrNoHistory says the clone lacks the previous chart's commit (a shallow clone).
var ErrNoHistory = fmt.Errorf("the commit of the previous chart is not in this clone")

// ExtractPrevious writes charts/etcd-operator of the previous chart version (E2E_HELM_PREVIOUS_REF
// or PreviousChartRef) from the git history of the repository at root into dir, and returns
// the chart's path.
func ExtractPrevious(ctx context.Context, root, dir string) (string, error) {
	ref := PreviousChartRef
	if r := os.Getenv("E2E_HELM_PREVIOUS_REF"); r != "" {
		ref = r
	}
	if err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-e", ref+"^{commit}").Run(); err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoHistory, ref)
	}
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", ref, "charts/etcd-operator")
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s charts/etcd-operator: %w: %s", ref, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("tar: %w: %s", err, stderr.String())
	}
	return filepath.Join(dir, "charts", "etcd-operator"), nil
}
