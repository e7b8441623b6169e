package releasetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if release.dist != "" {
		_ = os.RemoveAll(filepath.Dir(release.dist))
	}
	os.Exit(code)
}

// The release both TestRelease and TestOperatorImage check: hack/release.sh builds the image
// index of both platforms, which takes most of a minute, so it runs once for the package.
var release struct {
	once         sync.Once
	dist, images string // dist/ and the image archive directory, under one scratch directory
	out          string
	err          error
}

// builtRelease runs hack/release.sh once for the package (VERSION releaseVersion, IMG
// releaseImage) and returns its dist/ and the directory of its image archive, under a scratch
// directory TestMain removes (a t.TempDir would vanish with the first test that asked).
func builtRelease(t *testing.T) (dist, images string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds images: skipped with -short")
	}
	release.once.Do(func() {
		dir, err := os.MkdirTemp("", "releasetest-")
		if err != nil {
			release.err = err
			return
		}
		release.dist, release.images = filepath.Join(dir, "dist"), filepath.Join(dir, "images")
		start := time.Now()
		cmd := exec.Command(filepath.Join(repoRoot(), "hack", "release.sh"))
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "VERSION="+releaseVersion, "IMG="+releaseImage,
			"DIST_DIR="+release.dist, "RELEASE_IMAGES_DIR="+release.images)
		out, err := cmd.CombinedOutput()
		release.out, release.err = string(out), err
		release.out += fmt.Sprintf("(hack/release.sh took %s)", time.Since(start).Round(time.Second))
	})
	if release.err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", release.err, release.out)
	}
	t.Log(release.out[strings.LastIndex(release.out, "\n")+1:])
	return release.dist, release.images
}

// ociArchive is an OCI image layout tar read into memory: blobs by digest and index.json.
type ociArchive struct {
	blobs map[string][]byte
	index []byte
}

func readOCIArchive(t *testing.T, path string) ociArchive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := ociArchive{blobs: map[string][]byte{}}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case hdr.Name == "index.json":
			a.index = data
		case strings.HasPrefix(hdr.Name, "blobs/sha256/") && hdr.Typeflag == tar.TypeReg:
			a.blobs["sha256:"+strings.TrimPrefix(hdr.Name, "blobs/sha256/")] = data
		}
	}
	return a
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
	Manifests []descriptor `json:"manifests"`
}

func (a ociArchive) manifest(t *testing.T, data []byte) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("parsing a manifest: %v", err)
	}
	return m
}

func (a ociArchive) blob(t *testing.T, digest string) []byte {
	t.Helper()
	b, ok := a.blobs[digest]
	if !ok {
		t.Fatalf("blob %s missing from the archive", digest)
	}
	return b
}

// layerFiles returns the regular files of a gzipped layer tar by path.
func layerFiles(t *testing.T, layer []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if files[hdr.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// parsePEMCerts returns every certificate in a PEM bundle; any other block or a certificate
// that does not parse fails the test.
func parsePEMCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			t.Fatalf("unexpected PEM block %q in the CA bundle", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("certificate %d of the CA bundle: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	return certs
}

// googleChain returns the leaf and intermediates in testdata/google-chain.pem.
func googleChain(t *testing.T) (*x509.Certificate, *x509.CertPool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "google-chain.pem"))
	if err != nil {
		t.Fatal(err)
	}
	certs := parsePEMCerts(t, data)
	if len(certs) != 2 {
		t.Fatalf("testdata/google-chain.pem: %d certificates, want 2", len(certs))
	}
	inter := x509.NewCertPool()
	inter.AddCert(certs[1])
	return certs[0], inter
}

// chainTime is when the test chain was valid.
var chainTime = time.Unix(1677615892, 0)

func verifyGoogle(roots *x509.CertPool, leaf *x509.Certificate, inter *x509.CertPool) error {
	chains, err := leaf.Verify(x509.VerifyOptions{DNSName: "www.google.com", Roots: roots, Intermediates: inter, CurrentTime: chainTime})
	if err != nil {
		return err
	}
	if root := chains[0][len(chains[0])-1].Subject.CommonName; root != "GTS Root R1" {
		return fmt.Errorf("chain ends at %q, want GTS Root R1", root)
	}
	return nil
}
