//go:build e2e

// Package helm holds the e2e test of the Helm chart (charts/etcd-operator): it installs the
// chart into the local cluster next to the kustomize-deployed operators of hack/deploy.sh.
package helm

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestHelmInstall: `helm install` of charts/etcd-operator into its own release namespace, with
// the operators watching one other namespace only (RoleBindings there, no ClusterRoleBinding),
// brings up the three Deployments; an EtcdCluster of size 3 in the watched namespace becomes
// Available with 3 ready members, and the chart's etcd-operator reports it in its metrics;
// `helm uninstall` removes the release's cluster-scoped objects and leaves the CRDs (which this
// release does not install: crds.install=false next to the kustomize-deployed CRDs).
//
// The kustomize-deployed operators in etcd-operator-system watch every namespace but the
// watched namespace of this test and of TestHelmUpgrade (hack/e2e.sh deploys them with
// --exclude-namespace, see unwatchedNamespace): the chart's operators alone run the cluster, and
// the metrics of the chart's etcd-operator show that it did.
//
// Prints MEASURE lines: helm install, Deployments Available, EtcdCluster Available, uninstall.
func TestHelmInstall(t *testing.T) {
	f := framework.Global(t)
	helm := helmBinary(t, f)
	releaseNS := f.CreateNamespace(t, "helm-release")
	watchNS := unwatchedNamespace(t, f, "e2e-helm-watched")
	release := "e2e-" + releaseNS[strings.LastIndex(releaseNS, "-")+1:]
	repo, tag := image()

	start := time.Now()
	out, err := run(f, helm, "install", release, filepath.Join(f.RootDir, "charts", "etcd-operator"),
		"--namespace", releaseNS, "--set", "watchNamespace="+watchNS,
		// The CRDs are the kustomize-deployed operators' (hack/deploy.sh): this release must
		// not take them over (TestHelmUpgrade does).
		"--set", "crds.install=false",
		"--set", "image.repository="+repo, "--set", "image.tag="+tag, "--timeout", "2m")
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Logf("MEASURE helm install: %s", time.Since(start).Round(100*time.Millisecond))
	uninstalled := false
	t.Cleanup(func() { // before the namespaces go (cleanups run last-in first-out)
		if !uninstalled {
			if out, err := run(f, helm, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m"); err != nil {
				t.Errorf("helm uninstall: %v\n%s", err, out)
			}
		}
	})

	start = time.Now()
	for _, d := range framework.OperatorDeployments {
		f.WaitForDeploymentAvailable(t, releaseNS, release+"-"+d, 2*time.Minute)
	}
	t.Logf("MEASURE helm Deployments Available: %s", time.Since(start).Round(100*time.Millisecond))
	// The three generated roles, their three *-metrics-auth parts and <release>-metrics-reader.
	checkClusterScoped(t, f, release, 7)

	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: watchNS, Name: "c"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	f.Create(t, c)
	start = time.Now()
	framework.Eventually(t, 3*time.Minute, "EtcdCluster Available with 3 ready members", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		s := c.Status
		av := meta.FindStatusCondition(s.Conditions, etcdv1beta2.ClusterConditionAvailable)
		if av == nil || av.Status != metav1.ConditionTrue || s.ReadyMembers != 3 || len(s.Members.Ready) != 3 || len(s.Members.Unready) != 0 {
			return false, fmt.Errorf("phase=%s ready=%d members=%+v available=%v", s.Phase, s.ReadyMembers, s.Members, av)
		}
		return true, nil
	})
	t.Logf("MEASURE EtcdCluster (size 3) create -> Available: %s", time.Since(start).Round(100*time.Millisecond))

	// The chart's etcd-operator watched the namespace and observed the 3 ready members.
	want := regexp.MustCompile(`(?m)^etcd_operator_cluster_members\{[^}]*cluster_namespace="` + watchNS + `"[^}]*state="ready"[^}]*\} 3$`)
	token := f.MetricsToken(t, releaseNS, release+"-metrics-reader")
	framework.Eventually(t, time.Minute, "chart's etcd-operator metrics report 3 ready members", func(ctx context.Context) (bool, error) {
		body, err := operatorMetrics(ctx, f, releaseNS, release, token)
		if err != nil {
			return false, err
		}
		if !want.MatchString(body) {
			return false, fmt.Errorf("no %s in the metrics", want)
		}
		return true, nil
	})

	start = time.Now()
	if out, err := run(f, helm, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	t.Logf("MEASURE helm uninstall: %s", time.Since(start).Round(100*time.Millisecond))
	checkClusterScoped(t, f, release, 0)
	f.WaitForCRDEstablished(t, "etcdclusters.etcd.database.coreos.com", 10*time.Second) // helm leaves CRDs alone
}

// unwatchedNamespace creates the namespace name for a Helm release's operators to watch alone:
// the shared operators of hack/deploy.sh must leave it out (--exclude-namespace, which
// hack/e2e.sh passes through EXCLUDE_NAMESPACES). Two operators acting on one EtcdCluster race
// each other's membership changes, and a pass of one that waited on etcd writes what it
// observed before over the other's newer status (docs/flakes.md).
func unwatchedNamespace(t *testing.T, f *framework.Framework, name string) string {
	t.Helper()
	var dep appsv1.Deployment
	if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: framework.OperatorNamespace, Name: "etcd-operator"}, &dep); err != nil {
		t.Fatal(err)
	}
	excluded := false
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--exclude-namespace="); ok && slices.Contains(strings.Split(v, ","), name) {
			excluded = true
		}
	}
	if !excluded {
		t.Fatalf("the operators in %s watch namespace %s too: deploy them with EXCLUDE_NAMESPACES naming it (hack/e2e.sh does; args %v)",
			framework.OperatorNamespace, name, dep.Spec.Template.Spec.Containers[0].Args)
	}
	return f.CreateNamespaceNamed(t, name)
}

// helmBinary returns $E2E_HELM or the pinned helm of hack/helm.sh (built into bin/ once).
func helmBinary(t *testing.T, f *framework.Framework) string {
	t.Helper()
	if h := os.Getenv("E2E_HELM"); h != "" {
		return h
	}
	cmd := exec.Command(filepath.Join(f.RootDir, "hack", "helm.sh"), "install")
	cmd.Dir = f.RootDir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/helm.sh install: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// image splits $IMG (hack/images.sh and hack/deploy.sh, default etcd-operator:dev).
func image() (repo, tag string) {
	img := os.Getenv("IMG")
	if img == "" {
		img = "etcd-operator:dev"
	}
	if i := strings.LastIndex(img, ":"); i > 0 && !strings.Contains(img[i:], "/") {
		return img[:i], img[i+1:]
	}
	return img, "latest"
}

func run(f *framework.Framework, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = f.RootDir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkClusterScoped asserts that the release owns want ClusterRoles, each named
// <release>-<name>, and no ClusterRoleBinding but the *-metrics-auth ones (the operators watch
// one namespace).
func checkClusterScoped(t *testing.T, f *framework.Framework, release string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := client.MatchingLabels{"app.kubernetes.io/instance": release}
	var roles rbacv1.ClusterRoleList
	if err := f.Client.List(ctx, &roles, sel); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range roles.Items {
		names = append(names, r.Name)
		if !strings.HasPrefix(r.Name, release+"-") {
			t.Errorf("ClusterRole %s is not prefixed with the release name", r.Name)
		}
		var gen rbacv1.ClusterRole
		if err := f.Client.Get(ctx, types.NamespacedName{Name: strings.TrimPrefix(r.Name, release+"-")}, &gen); err == nil &&
			fmt.Sprint(gen.Rules) != fmt.Sprint(r.Rules) {
			t.Errorf("ClusterRole %s has other rules than the kustomize-installed %s", r.Name, gen.Name)
		}
	}
	if len(roles.Items) != want {
		t.Fatalf("ClusterRoles of release %s: %v, want %d", release, names, want)
	}
	var bindings rbacv1.ClusterRoleBindingList
	if err := f.Client.List(ctx, &bindings, sel); err != nil {
		t.Fatal(err)
	}
	// Cluster-wide, a watchNamespace release binds only the TokenReview/SubjectAccessReview
	// rules --metrics-secure needs.
	for _, b := range bindings.Items {
		if !strings.HasSuffix(b.Name, "-metrics-auth") {
			t.Errorf("release %s has ClusterRoleBinding %s, want only *-metrics-auth with watchNamespace set", release, b.Name)
		}
	}
	for _, r := range roles.Items {
		for _, rule := range r.Rules {
			if strings.HasSuffix(r.Name, "-metrics-auth") && !slices.Contains([]string{"tokenreviews", "subjectaccessreviews"}, strings.Join(rule.Resources, ",")) {
				t.Errorf("ClusterRole %s grants %v, want only token and access reviews", r.Name, rule.Resources)
			}
		}
	}
}

// operatorMetrics fetches the secure /metrics of the release's etcd-operator pod from the host
// with token (a service account bound to <release>-metrics-reader).
func operatorMetrics(ctx context.Context, f *framework.Framework, ns, release, token string) (string, error) {
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator", "app.kubernetes.io/instance": release}); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		return f.ScrapeMetrics(ctx, net.JoinHostPort(p.Status.PodIP, "8443"), token)
	}
	return "", fmt.Errorf("no running etcd-operator pod of release %s", release)
}
