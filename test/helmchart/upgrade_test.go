package helmchart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/manager"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestHelmUpgradeUpgradesCRDs runs the real helm against a kube-apiserver (envtest, no CRDs
// preinstalled):
//  1. `helm install` of the previous chart version (PreviousChartRef, CRDs in crds/) installs
//     its CRDs; an EtcdCluster is created, and an EtcdBackup's s3.endpointCA is dropped (the
//     old CRD has no such field);
//  2. `helm upgrade --take-ownership` to the working tree's chart upgrades the CRDs: endpointCA
//     is stored now, the EtcdCluster is the same object (UID), and the CRDs belong to the
//     release with helm.sh/resource-policy: keep; a second upgrade needs no --take-ownership;
//  3. `helm uninstall` leaves the CRDs and the EtcdCluster (crds.keep, the default);
//  4. a release with crds.keep=false deletes the CRDs, and with them every custom resource, on
//     uninstall (what docs/monitoring.md and the chart README warn about).
func TestHelmUpgradeUpgradesCRDs(t *testing.T) {
	previous := previousChart(t)
	assets, err := testutil.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	// The kube-apiserver's log is kept for a failure's message: the CRD finalizer that deletes
	// the custom resources runs in the apiserver.
	apiLog := &lockedBuffer{}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	env.ControlPlane.APIServer = &envtest.APIServer{Out: apiLog, Err: apiLog}
	env.ControlPlane.APIServer.Configure().Append("v", "2")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log (CRD lines):\n%s", apiLog.grep("customresource", "finalizer", "crd"))
		}
	})
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	mustHelm := func(args ...string) {
		t.Helper()
		start := time.Now()
		if out, err := runHelm(t, kubeconfig, args...); err != nil {
			t.Fatalf("helm %s: %v\n%s\nCRDs: %s", strings.Join(args, " "), err, out, crdConditions(c))
		}
		t.Logf("helm %s: %s", args[0], time.Since(start).Round(100*time.Millisecond))
	}
	image := "--set=image.repository=example.invalid/etcd-operator"

	// 1. The previous chart.
	mustHelm("install", "eo", previous, "--namespace", "ops", "--create-namespace", image)
	waitCRDs(t, c, true)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}); err != nil {
		t.Fatal(err)
	}
	cluster := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "keep-me"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	if err := c.Create(t.Context(), cluster); err != nil {
		t.Fatal(err)
	}
	if got := createBackup(t, c, "before"); got != nil {
		t.Fatalf("the previous chart's CRD stored s3.endpointCA %+v: pick a PreviousChartRef without the field", got)
	}

	// 2. Upgrade to the working tree's chart.
	mustHelm("upgrade", "eo", chartDir, "--namespace", "ops", image, "--take-ownership")
	waitCRDs(t, c, true)
	if got := createBackup(t, c, "after"); got == nil || got.Name != "minio-ca" {
		t.Fatalf("after the upgrade s3.endpointCA = %+v, want the Secret minio-ca", got)
	}
	after := &etcdv1beta2.EtcdCluster{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cluster), after); err != nil || after.UID != cluster.UID {
		t.Fatalf("EtcdCluster after the upgrade: %v (UID %s, was %s)", err, after.UID, cluster.UID)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "etcdclusters.etcd.database.coreos.com"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Annotations["meta.helm.sh/release-name"] != "eo" || crd.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Fatalf("CRD annotations after the upgrade: %v", crd.Annotations)
	}
	mustHelm("upgrade", "eo", chartDir, "--namespace", "ops", image)

	// 3. Uninstall keeps the CRDs and so the clusters.
	mustHelm("uninstall", "eo", "--namespace", "ops", "--wait")
	waitCRDs(t, c, true)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cluster), after); err != nil || after.UID != cluster.UID {
		t.Fatalf("EtcdCluster after helm uninstall: %v", err)
	}

	// 4. crds.keep=false: uninstall deletes the CRDs and every custom resource.
	mustHelm("install", "eo2", chartDir, "--namespace", "ops", image, "--set", "crds.keep=false", "--take-ownership")
	waitServedFromCache(t, c)
	mustHelm("uninstall", "eo2", "--namespace", "ops", "--wait")
	waitCRDs(t, c, false)
}

// waitServedFromCache waits until the kube-apiserver serves every kind of the project from its
// watch cache, as it does where the operators run (their informers list every kind). Without
// this, deleting a CRD whose custom resources nothing has read makes the apiserver's CRD
// finalizer create that kind's storage, fail with "storage is (re)initializing" and retry with
// exponential backoff: a CI run's `helm uninstall --wait` waited 3 minutes for it.
func waitServedFromCache(t *testing.T, c client.Client) {
	t.Helper()
	lists := []client.ObjectList{&etcdv1beta2.EtcdClusterList{}, &etcdv1beta2.EtcdBackupList{},
		&etcdv1beta2.EtcdBackupScheduleList{}, &etcdv1beta2.EtcdRestoreList{}}
	for _, l := range lists {
		// ResourceVersion "0" is served by the watch cache only, and refused until it is ready.
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return c.List(ctx, l, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}) == nil, nil
		})
		if err != nil {
			t.Fatalf("listing %T from the watch cache: %v", l, err)
		}
	}
}

// createBackup creates an EtcdBackup to S3 with s3.endpointCA set and returns the endpointCA
// the API server stored (nil if it pruned the field).
func createBackup(t *testing.T, c client.Client, name string) *etcdv1beta2.SecretKeySelector {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "keep-me"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/keep-me", AWSSecret: "aws",
				EndpointCA: &etcdv1beta2.SecretKeySelector{Name: "minio-ca"}}}}}
	if err := c.Create(t.Context(), b); err != nil {
		t.Fatalf("creating EtcdBackup %s: %v", name, err)
	}
	got := &etcdv1beta2.EtcdBackup{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	return got.Spec.S3.EndpointCA
}

// waitCRDs waits until the project's four CRDs are all established (present) or all gone.
func waitCRDs(t *testing.T, c client.Client, present bool) {
	t.Helper()
	names := []string{"etcdclusters", "etcdbackups", "etcdbackupschedules", "etcdrestores"}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKey{Name: n + ".etcd.database.coreos.com"}, crd)
			switch {
			case apierrors.IsNotFound(err):
				if present {
					return false, nil
				}
			case err != nil:
				return false, err
			case !present:
				return false, nil
			default:
				established := false
				for _, cond := range crd.Status.Conditions {
					established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
				}
				if !established {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("CRDs present=%v: %v", present, err)
	}
}

// crdConditions describes the project's CRDs and their conditions, for a failure's message (a
// CRD that is not deleted says why in its Terminating condition).
func crdConditions(c client.Client) string {
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(context.Background(), &list); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, crd := range list.Items {
		fmt.Fprintf(&b, "\n  %s deleted=%v finalizers=%v", crd.Name, crd.DeletionTimestamp != nil, crd.Finalizers)
		for _, cond := range crd.Status.Conditions {
			fmt.Fprintf(&b, "\n    %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	return b.String()
}

// lockedBuffer is an io.Writer safe for the apiserver's two streams.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// grep returns the lines that contain any of words (case-insensitive), at most the last 200.
func (b *lockedBuffer) grep(words ...string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		for _, w := range words {
			if strings.Contains(strings.ToLower(l), w) {
				lines = append(lines, l)
				break
			}
		}
	}
	return strings.Join(lines[max(0, len(lines)-200):], "\n")
}
