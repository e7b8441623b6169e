//go:build e2e && upgrade

package upgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// currentImage is the working tree's operator image on the local cluster (hack/images.sh).
const currentImage = "etcd-operator:dev"

// deployTimeout bounds one deploy: hack/deploy.sh apply and the rollout after it.
const deployTimeout = 4 * time.Minute

// release is one release of the suite, deployed by its own tree's hack/deploy.sh.
type release struct {
	name  string // for messages: "previous", "current"
	root  string // the tree whose hack/deploy.sh and manifests/ are applied
	image string // the operator image its Deployments run
}

// releases are the previous release (hack/upgrade-test.sh extracted its tree into
// E2E_UPGRADE_PREV_DIR and imported its image as E2E_UPGRADE_PREV_IMG) and the working tree's.
func releases(f *framework.Framework, prevDir string) (previous, current release) {
	img := os.Getenv("E2E_UPGRADE_PREV_IMG")
	if img == "" {
		img = "etcd-operator:prev"
	}
	return release{name: "previous", root: prevDir, image: img}, release{name: "current", root: f.RootDir, image: currentImage}
}

// deploy applies r's CRDs, RBAC and operators with r's hack/deploy.sh, on the cluster and with
// the kubectl the framework uses and the working tree's cache, then waits until every operator
// Deployment runs r's image alone: all replicas updated and Available, no pod of an older
// ReplicaSet left (one still terminating may still act as the leader).
func deploy(ctx context.Context, f *framework.Framework, r release) error {
	ctx, cancel := context.WithTimeout(ctx, deployTimeout)
	defer cancel()
	cache := os.Getenv("CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(f.RootDir, ".cache")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(r.root, "hack", "deploy.sh"), "apply")
	cmd.Env = append(os.Environ(), "CACHE_DIR="+cache, "IMG="+r.image, "KUBECTL="+f.KubectlPath, "KUBECONFIG="+f.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s/hack/deploy.sh apply (the %s release, image %s): %w\n%s", r.root, r.name, r.image, err, out)
	}
	for _, d := range framework.OperatorDeployments {
		if err := framework.Poll(ctx, deployTimeout, func(ctx context.Context) (bool, error) { return rolledOut(ctx, f, d, r.image) }); err != nil {
			return fmt.Errorf("the %s release's Deployment %s: %w", r.name, d, err)
		}
	}
	return nil
}

// rolledOut reports whether Deployment name runs image in every replica, updated and Available,
// with no pod of another ReplicaSet left.
func rolledOut(ctx context.Context, f *framework.Framework, name, image string) (bool, error) {
	d := &appsv1.Deployment{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: name}, d); err != nil {
		return false, err
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		return false, fmt.Errorf("its pod template runs %s", got)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	available := false
	for _, c := range d.Status.Conditions {
		available = available || (c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue)
	}
	if d.Status.ObservedGeneration < d.Generation || !available || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want || d.Status.Replicas != want {
		return false, fmt.Errorf("generation %d observed %d, Available %t, replicas %d updated %d available %d, want %d",
			d.Generation, d.Status.ObservedGeneration, available, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, want)
	}
	hash, err := newestTemplateHash(ctx, f, d)
	if err != nil {
		return false, err
	}
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(framework.OperatorNamespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return false, err
	}
	var old []string
	for _, p := range pods.Items {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || p.DeletionTimestamp != nil {
			old = append(old, p.Name)
		}
	}
	return len(old) == 0 && len(pods.Items) == int(want), fmt.Errorf("pods of an older ReplicaSet or terminating: %v (%d pods)", old, len(pods.Items))
}

// newestTemplateHash is the pod-template-hash of d's ReplicaSet of d's current revision.
func newestTemplateHash(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) (string, error) {
	const revision = "deployment.kubernetes.io/revision"
	sets := &appsv1.ReplicaSetList{}
	if err := f.Client.List(ctx, sets, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return "", err
	}
	for _, rs := range sets.Items {
		if rs.Annotations[revision] == d.Annotations[revision] && rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], nil
		}
	}
	return "", fmt.Errorf("no ReplicaSet of revision %s yet", d.Annotations[revision])
}

// saveOperatorLogs writes each operator's whole log to E2E_DUMP_DIR/<ns>-<when>-<operator>.log
// (the previous release's pods are gone after the upgrade, and with them their logs) and logs
// how many lines name ns and how many of those report an error, with the first few.
func saveOperatorLogs(t *testing.T, f *framework.Framework, ns, when string) {
	t.Helper()
	dir := os.Getenv("E2E_DUMP_DIR")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, op := range framework.OperatorDeployments {
		out, _, err := f.Kubectl(ctx, "-n", framework.OperatorNamespace, "logs", "deployment/"+op, "--all-containers", "--tail=-1")
		if err != nil {
			t.Logf("%s log %s: %v", op, when, err)
			continue
		}
		var named, errs []string
		for line := range strings.Lines(out) {
			if !strings.Contains(line, ns) {
				continue
			}
			named = append(named, line)
			if strings.Contains(strings.ToLower(line), "error") {
				errs = append(errs, strings.TrimSpace(line))
			}
		}
		where := ""
		if dir != "" {
			path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.log", ns, when, op))
			if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(path, []byte(out), 0o644) == nil {
				where = ", saved in " + path
			}
		}
		t.Logf("%s log %s: %d lines name %s, %d of them errors%s", op, when, len(named), ns, len(errs), where)
		for _, l := range errs[:min(len(errs), 5)] {
			t.Logf("  %s", l)
		}
	}
}
