package releasetest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

const (
	releaseVersion = "0.0.0-releasetest"
	releaseImage   = "registry.example.com/etcd/etcd-operator:v0.0.0-releasetest"
)

// TestRelease runs hack/release.sh into a scratch dist/ and checks what a user downloads:
// SHA256SUMS verify every artifact, install.yaml parses and installs the four CRDs, RBAC and
// three Deployments of the released image, the Helm chart carries the version and image, the
// SBOM lists the modules of the binaries of both platforms (the kubectl plugin's too),
// images.txt pins the index digest (TestKubectlPlugin checks the plugin's archives and krew
// manifest).
func TestRelease(t *testing.T) {
	dist, _ := builtRelease(t)

	files := checkSums(t, dist)
	for _, want := range []string{"install.yaml", "etcd-operator-" + releaseVersion + ".tgz", "sbom.spdx.json", "images.txt",
		"krew-etcd.yaml", "kubectl-etcd_linux_amd64.tar.gz", "kubectl-etcd_linux_arm64.tar.gz"} {
		if !files[want] {
			t.Errorf("dist/ lacks %s (SHA256SUMS names %v)", want, files)
		}
	}
	checkInstallYAML(t, filepath.Join(dist, "install.yaml"))
	checkChart(t, filepath.Join(dist, "etcd-operator-"+releaseVersion+".tgz"))
	checkSBOM(t, filepath.Join(dist, "sbom.spdx.json"))
	images, _ := os.ReadFile(filepath.Join(dist, "images.txt"))
	if lines := strings.Fields(string(images)); len(lines) != 2 || lines[0] != releaseImage ||
		!strings.HasPrefix(lines[1], "registry.example.com/etcd/etcd-operator@sha256:") {
		t.Errorf("images.txt = %q, want the image and its digest reference", images)
	}
}

// checkSums verifies SHA256SUMS like `sha256sum -c` and returns the files it names; every
// other file of dist/ must be named too.
func checkSums(t *testing.T, dist string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	named := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %s", name, got, sum)
		}
		named[name] = true
	}
	entries, _ := os.ReadDir(dist)
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !named[e.Name()] {
			t.Errorf("%s is not in SHA256SUMS", e.Name())
		}
	}
	return named
}

func checkInstallYAML(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("install.yaml: %v", err)
		}
		kinds[obj.Kind]++
		if obj.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
			t.Fatalf("install.yaml Deployment %s: %v", obj.Metadata.Name, err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image != releaseImage {
				t.Errorf("Deployment %s container %s runs %q, want %q", d.Name, c.Name, c.Image, releaseImage)
			}
		}
		if d.Namespace != "etcd-operator-system" {
			t.Errorf("Deployment %s in namespace %q", d.Name, d.Namespace)
		}
	}
	want := map[string]int{"CustomResourceDefinition": 4, "Namespace": 1, "ServiceAccount": 3,
		"ClusterRole": 4, "ClusterRoleBinding": 3, "Deployment": 3} // 3 generated + etcd-operator-metrics-reader
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("install.yaml has %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}

func checkChart(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, data) // a gzipped tar, as a layer is
	var chart struct{ Name, Version, AppVersion string }
	if err := yaml.Unmarshal(files["etcd-operator/Chart.yaml"], &chart); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if chart.Version != releaseVersion || chart.AppVersion != "v"+releaseVersion {
		t.Errorf("chart %+v, want version %s appVersion v%s", chart, releaseVersion, releaseVersion)
	}
	var values struct {
		Image struct{ Repository, Tag string }
	}
	if err := yaml.Unmarshal(files["etcd-operator/values.yaml"], &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	if got := values.Image.Repository + ":" + values.Image.Tag; got != releaseImage {
		t.Errorf("chart's default image %q, want %q", got, releaseImage)
	}
	// The CRDs are templates rendered from files/crds, so helm upgrade upgrades them.
	if len(files["etcd-operator/files/crds/etcd.database.coreos.com_etcdclusters.yaml"]) == 0 {
		t.Error("the chart has no EtcdCluster CRD")
	}
}

func checkSBOM(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string
		Packages    []struct {
			SPDXID, Name, VersionInfo string
		}
		Relationships []struct{ RelationshipType string }
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		t.Fatalf("sbom.spdx.json: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q", doc.SPDXVersion)
	}
	have := map[string]string{}
	for _, p := range doc.Packages {
		have[p.Name+" "+p.SPDXID] = p.VersionInfo
		have[p.Name] = p.VersionInfo
	}
	for _, bin := range []string{"etcd-operator", "backup-operator", "restore-operator", "etcdctl", "etcdutl", "kubectl-etcd"} {
		for _, plat := range []string{"linux-amd64", "linux-arm64"} {
			if _, ok := have[bin+" SPDXRef-binary-"+bin+"-"+plat]; !ok {
				t.Errorf("SBOM lacks the binary %s for %s", bin, plat)
			}
		}
	}
	for mod, v := range map[string]string{"k8s.io/client-go": "v0.33.13", "go.etcd.io/etcd/client/v3": "v3.6.16",
		"github.com/etcd-operator/etcd-operator": "v" + releaseVersion} {
		if have[mod] != v {
			t.Errorf("SBOM: module %s at %q, want %s", mod, have[mod], v)
		}
	}
	if _, ok := have["golang.org/x/crypto/x509roots/fallback"]; !ok {
		t.Error("SBOM lacks golang.org/x/crypto/x509roots/fallback")
	}
	if len(doc.Relationships) < len(doc.Packages) {
		t.Errorf("%d relationships for %d packages", len(doc.Relationships), len(doc.Packages))
	}
}
