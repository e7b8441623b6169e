package releasetest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (krew.googlecontainertools.github.com/v1alpha2)
// that krew reads to install a plugin.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKubectlPlugin (issue 33 item 1): the release bundle carries the kubectl plugin for both
// release platforms, each archive holding kubectl-etcd (static, that platform's, stamped with
// the version), kubectl_complete-etcd and LICENSE, and a krew manifest that names each archive with its sha256, so
// `krew install --manifest=krew-etcd.yaml` installs it. The host's binary runs and says its
// version.
func TestKubectlPlugin(t *testing.T) {
	dist, _ := builtRelease(t)
	data, err := os.ReadFile(filepath.Join(dist, "krew-etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("krew-etcd.yaml: %v\n%s", err, data)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "etcd" ||
		m.Spec.Version != "v"+releaseVersion || m.Spec.ShortDescription == "" || m.Spec.Description == "" || m.Spec.Homepage == "" {
		t.Errorf("krew-etcd.yaml: %+v", m)
	}
	platforms := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		platforms[goos+"/"+arch] = true
		name := "kubectl-etcd_" + goos + "_" + arch + ".tar.gz"
		if !strings.HasSuffix(p.URI, "/v"+releaseVersion+"/"+name) || p.Bin != "kubectl-etcd" {
			t.Errorf("%s/%s: uri %s bin %s, want the release's %s and kubectl-etcd", goos, arch, p.URI, p.Bin, name)
		}
		archive, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(archive); hex.EncodeToString(sum[:]) != p.SHA256 {
			t.Errorf("%s: sha256 %x, the manifest says %s", name, sum, p.SHA256)
		}
		files := layerFiles(t, archive) // a gzipped tar, as a layer is
		if len(files) != 3 || len(files["LICENSE"]) == 0 || !strings.Contains(string(files["kubectl_complete-etcd"]), `exec kubectl-etcd __complete "$@"`) {
			t.Errorf("%s holds %d files, want kubectl-etcd, kubectl_complete-etcd (exec kubectl-etcd __complete) and LICENSE", name, len(files))
		}
		checkBinary(t, name+": kubectl-etcd", files["kubectl-etcd"], arch)
		if goos == runtime.GOOS && arch == runtime.GOARCH {
			bin := filepath.Join(t.TempDir(), "kubectl-etcd")
			if err := os.WriteFile(bin, files["kubectl-etcd"], 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "kubectl-etcd v"+releaseVersion+" commit ") {
				t.Errorf("kubectl-etcd version: %v %q, want kubectl-etcd v%s commit ...", err, out, releaseVersion)
			}
		}
	}
	if len(platforms) != 2 || !platforms["linux/amd64"] || !platforms["linux/arm64"] {
		t.Errorf("krew-etcd.yaml platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}
