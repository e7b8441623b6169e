package releasetest

import (
	"bytes"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// The roots the operator binaries embed: TestFallbackRootsWithoutSystemRoots checks that a
	// binary with this import verifies public chains on a system without roots.
	_ "golang.org/x/crypto/x509roots/fallback"
)

const caBundlePath = "etc/ssl/certs/ca-certificates.crt"

// TestOperatorImage checks the operator image a release builds (hack/release.sh, through
// hack/images.sh with NO_IMPORT=1, for both release platforms: hack/images.sh builds only the
// host's for the local cluster) and every platform of its index: the public CA roots at
// /etc/ssl/certs/ca-certificates.crt (over 100 certificates, including the roots of AWS, Google
// and Azure endpoints, and a real public chain verifies against them), and binaries built for
// that platform with the embedded fallback roots and the version stamp. The index is the one
// dist/images.txt pins.
func TestOperatorImage(t *testing.T) {
	dist, images := builtRelease(t)
	path, err := os.ReadFile(filepath.Join(images, "operator.path"))
	if err != nil {
		t.Fatal(err)
	}
	a := readOCIArchive(t, strings.TrimSpace(string(path)))
	top := a.manifest(t, a.index)
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["io.containerd.image.name"] != releaseImage {
		t.Fatalf("index.json = %s, want one image index named %s", a.index, releaseImage)
	}
	pinned, _ := os.ReadFile(filepath.Join(dist, "images.txt"))
	if want := strings.Split(releaseImage, ":")[0] + "@" + top.Manifests[0].Digest; !strings.Contains(string(pinned), want+"\n") {
		t.Errorf("images.txt = %q, want it to pin the archive's index %s", pinned, want)
	}
	idx := a.manifest(t, a.blob(t, top.Manifests[0].Digest))
	platforms := map[string]bool{}
	leaf, inter := googleChain(t)
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("index entry %s has no platform", m.Digest)
		}
		arch := m.Platform.Architecture
		platforms[m.Platform.OS+"/"+arch] = true
		t.Run(m.Platform.OS+"/"+arch, func(t *testing.T) {
			img := a.manifest(t, a.blob(t, m.Digest))
			var cfg struct {
				OS, Architecture string
				Config           struct{ User string }
			}
			if err := json.Unmarshal(a.blob(t, img.Config.Digest), &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.OS != m.Platform.OS || cfg.Architecture != arch || cfg.Config.User != "65532:65532" {
				t.Errorf("config: os %q arch %q user %q", cfg.OS, cfg.Architecture, cfg.Config.User)
			}
			if len(img.Layers) != 1 {
				t.Fatalf("%d layers, want 1", len(img.Layers))
			}
			files := layerFiles(t, a.blob(t, img.Layers[0].Digest))
			checkCABundle(t, files[caBundlePath], leaf, inter)
			for _, bin := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
				checkBinary(t, bin, files["usr/local/bin/"+bin], arch)
			}
			for _, bin := range []string{"etcdctl", "etcdutl"} {
				info, err := buildinfo.Read(bytes.NewReader(files["usr/local/bin/"+bin]))
				if err != nil || setting(info, "GOARCH") != arch {
					t.Errorf("%s: build info %v, GOARCH %q, want %s", bin, err, setting(info, "GOARCH"), arch)
				}
			}
		})
	}
	if !platforms["linux/amd64"] || !platforms["linux/arm64"] {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

func checkCABundle(t *testing.T, data []byte, leaf *x509.Certificate, inter *x509.CertPool) {
	t.Helper()
	certs := parsePEMCerts(t, data)
	if len(certs) <= 100 {
		t.Fatalf("%s holds %d certificates, want over 100", caBundlePath, len(certs))
	}
	pool := x509.NewCertPool()
	names := map[string]bool{}
	for _, c := range certs {
		pool.AddCert(c)
		names[c.Subject.CommonName] = true
	}
	// S3/STS (Amazon), GCS (Google Trust Services), Azure Blob (DigiCert), Let's Encrypt.
	for _, cn := range []string{"Amazon Root CA 1", "GTS Root R1", "DigiCert Global Root G2", "ISRG Root X1"} {
		if !names[cn] {
			t.Errorf("%s lacks %q", caBundlePath, cn)
		}
	}
	if err := verifyGoogle(pool, leaf, inter); err != nil {
		t.Errorf("www.google.com does not verify against %s: %v", caBundlePath, err)
	}
	t.Logf("%s: %d certificates, %d bytes", caBundlePath, len(certs), len(data))
}

func checkBinary(t *testing.T, name string, data []byte, arch string) {
	t.Helper()
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := setting(info, "GOARCH"); got != arch {
		t.Errorf("%s built for %s, want %s", name, got, arch)
	}
	if setting(info, "CGO_ENABLED") != "0" {
		t.Errorf("%s: CGO_ENABLED=%q, want 0 (static)", name, setting(info, "CGO_ENABLED"))
	}
	hasFallback := false
	for _, d := range info.Deps {
		hasFallback = hasFallback || d.Path == "golang.org/x/crypto/x509roots/fallback"
	}
	if !hasFallback {
		t.Errorf("%s does not embed golang.org/x/crypto/x509roots/fallback", name)
	}
	// -trimpath builds record no -ldflags in the build info: the stamped value is in the data.
	if !bytes.Contains(data, []byte("v0.0.0-releasetest")) {
		t.Errorf("%s does not carry the version stamp v0.0.0-releasetest", name)
	}
}

func setting(info *buildinfo.BuildInfo, key string) string {
	if info == nil {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// TestFallbackRootsWithoutSystemRoots runs this test binary again with no system roots
// (SSL_CERT_FILE and SSL_CERT_DIR point at nothing, as in the operator image without its bundle
// file): the roots golang.org/x/crypto/x509roots/fallback registers verify a public chain, as
// the operators' imports make them do.
func TestFallbackRootsWithoutSystemRoots(t *testing.T) {
	leaf, inter := googleChain(t)
	if os.Getenv("RELEASETEST_NO_SYSTEM_ROOTS") == "1" {
		if err := verifyGoogle(nil, leaf, inter); err != nil { // nil Roots: the system pool
			t.Fatalf("without system roots: %v", err)
		}
		return
	}
	empty := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFallbackRootsWithoutSystemRoots$", "-test.v")
	cmd.Env = append(os.Environ(), "RELEASETEST_NO_SYSTEM_ROOTS=1",
		"SSL_CERT_FILE="+filepath.Join(empty, "none.pem"), "SSL_CERT_DIR="+empty)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFallbackRootsWithoutSystemRoots") {
		t.Fatalf("child without system roots: %v\n%s", err, out)
	}
	// Control: the same chain against an empty pool fails, so the pass above is the roots' doing.
	if err := verifyGoogle(x509.NewCertPool(), leaf, inter); err == nil {
		t.Fatal("the chain verified against an empty pool")
	}
}
