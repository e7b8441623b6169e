//go:build e2e

package helm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
	"github.com/etcd-operator/etcd-operator/test/helmchart"
)

// TestHelmUpgrade installs the previous chart version (helmchart.PreviousChartRef, from git
// history) with the operators watching one namespace, runs a 3-member EtcdCluster there, and
// `helm upgrade --take-ownership --wait`s to the working tree's chart:
//   - the release's Deployments roll to the new chart and become Available;
//   - the CRDs now belong to the release (kept on uninstall) and take a field the previous
//     chart's CRDs did not have (s3.endpointCA, checked with a server-side dry run);
//   - the EtcdCluster stays Available throughout with the same three member pods (same UIDs, no
//     restart);
//   - `helm uninstall` leaves the CRDs and the cluster.
//
// The local cluster is shared with the kustomize-deployed operators (hack/deploy.sh), which
// leave the watched namespace alone (unwatchedNamespace) and whose CRDs the previous chart finds
// in place (Helm skips crds/ that exist) and the new chart takes over: --take-ownership, as docs/install.md tells users upgrading from chart 0.1.0. The envtest
// test test/helmchart TestHelmUpgradeUpgradesCRDs shows the CRDs themselves changing, which the
// shared cluster cannot (its CRDs are the working tree's already).
//
// Prints MEASURE lines: install of the previous chart, upgrade.
func TestHelmUpgrade(t *testing.T) {
	f := framework.Global(t)
	helm := helmBinary(t, f)
	previous, err := helmchart.ExtractPrevious(t.Context(), f.RootDir, t.TempDir())
	if errors.Is(err, helmchart.ErrNoHistory) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	releaseNS := f.CreateNamespace(t, "helm-upgrade")
	watchNS := unwatchedNamespace(t, f, "e2e-helm-upgrade-watched")
	release := "up-" + releaseNS[strings.LastIndex(releaseNS, "-")+1:]
	repo, tag := image()
	common := []string{"--namespace", releaseNS, "--set", "watchNamespace=" + watchNS,
		"--set", "image.repository=" + repo, "--set", "image.tag=" + tag, "--wait", "--timeout", "3m"}

	start := time.Now()
	if out, err := run(f, helm, append([]string{"install", release, previous}, common...)...); err != nil {
		t.Fatalf("helm install (previous chart): %v\n%s", err, out)
	}
	t.Logf("MEASURE helm install of the previous chart: %s", time.Since(start).Round(100*time.Millisecond))
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			if out, err := run(f, helm, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m"); err != nil {
				t.Errorf("helm uninstall: %v\n%s", err, out)
			}
		}
	})
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: watchNS, Name: "c"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}})
	f.WaitClusterAvailable(t, watchNS, "c", 3, 4*time.Minute)
	before := memberPods(t, f, watchNS)

	// Watch the cluster during the upgrade: it must never leave Available.
	ctx, stop := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- stayAvailable(ctx, f, watchNS, "c") }()

	start = time.Now()
	out, err := run(f, helm, append([]string{"upgrade", release, filepath.Join(f.RootDir, "charts", "etcd-operator"), "--take-ownership"}, common...)...)
	if err != nil {
		stop()
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	t.Logf("MEASURE helm upgrade to the working tree's chart: %s", time.Since(start).Round(100*time.Millisecond))
	for _, d := range framework.OperatorDeployments {
		f.WaitForDeploymentAvailable(t, releaseNS, release+"-"+d, 2*time.Minute)
		var dep appsv1.Deployment
		if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: releaseNS, Name: release + "-" + d}, &dep); err != nil {
			t.Fatal(err)
		}
		if got := dep.Labels["helm.sh/chart"]; got != "etcd-operator-0.2.0" {
			t.Errorf("Deployment %s is of chart %s after the upgrade, want etcd-operator-0.2.0", d, got)
		}
	}
	checkCRDsOwned(t, f, release)
	checkNewFieldAccepted(t, f, watchNS)

	// Keep watching while the upgraded operators reconcile the cluster for a while.
	time.AfterFunc(20*time.Second, stop)
	if err := <-watched; err != nil {
		t.Fatalf("during the upgrade: %v", err)
	}
	f.WaitClusterAvailable(t, watchNS, "c", 3, time.Minute)
	if after := memberPods(t, f, watchNS); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("member pods changed across the upgrade: before %v, after %v", before, after)
	}

	if out, err := run(f, helm, "uninstall", release, "--namespace", releaseNS, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	f.WaitForCRDEstablished(t, "etcdclusters.etcd.database.coreos.com", 10*time.Second)
	if _, err := f.GetCluster(t.Context(), watchNS, "c"); err != nil {
		t.Fatalf("EtcdCluster after helm uninstall: %v", err)
	}
}

// memberPods lists the member pods of the namespace as name=UID, sorted.
func memberPods(t *testing.T, f *framework.Framework, ns string) []string {
	t.Helper()
	var pods corev1.PodList
	if err := f.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": "c"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name+"="+string(p.UID))
	}
	sort.Strings(out)
	return out
}

// stayAvailable polls the cluster until ctx ends and returns an error the first time it is not
// Available with 3 ready members.
func stayAvailable(ctx context.Context, f *framework.Framework, ns, name string) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			continue // a transient API error is no verdict on the cluster
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) || c.Status.ReadyMembers != 3 {
			return fmt.Errorf("EtcdCluster %s/%s left Available: phase %s, ready %v, unready %v", ns, name, c.Status.Phase, c.Status.Members.Ready, c.Status.Members.Unready)
		}
	}
}

// checkCRDsOwned: the four CRDs belong to the release and are kept on uninstall.
func checkCRDsOwned(t *testing.T, f *framework.Framework, release string) {
	t.Helper()
	for _, n := range []string{"etcdclusters", "etcdbackups", "etcdbackupschedules", "etcdrestores"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := f.Client.Get(t.Context(), client.ObjectKey{Name: n + ".etcd.database.coreos.com"}, crd); err != nil {
			t.Fatal(err)
		}
		if crd.Annotations["meta.helm.sh/release-name"] != release || crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s annotations %v: not owned by release %s with keep", crd.Name, crd.Annotations, release)
		}
	}
}

// checkNewFieldAccepted: a server-side dry run of an EtcdBackup with s3.endpointCA (absent from
// the previous chart's CRD) keeps the field.
func checkNewFieldAccepted(t *testing.T, f *framework.Framework, ns string) {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dry-run"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/c", AWSSecret: "aws",
				EndpointCA: &etcdv1beta2.SecretKeySelector{Name: "private-ca"}}}}}
	if err := f.Client.Create(t.Context(), b, client.DryRunAll); err != nil {
		t.Fatalf("dry-run create of an EtcdBackup with s3.endpointCA: %v", err)
	}
	if b.Spec.S3.EndpointCA == nil || b.Spec.S3.EndpointCA.Name != "private-ca" {
		t.Fatalf("the CRD dropped s3.endpointCA: %+v", b.Spec.S3)
	}
}
