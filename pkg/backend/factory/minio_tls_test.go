package factory

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// Credentials of the MinIO a test starts on a free loopback port (never reachable from outside).
const (
	tlsMinIOUser     = "etcd-suite"
	tlsMinIOPassword = "etcd-suite-secret-key"
)

// minioBinary returns the MinIO server hack/objstores.sh built under .cache/objstores (or
// $OBJSTORE_MINIO_BIN); without one the test skips, or fails when OBJSTORES_REQUIRED=1.
func minioBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("OBJSTORE_MINIO_BIN"); bin != "" {
		return bin
	}
	cache := os.Getenv("CACHE_DIR")
	if cache == "" {
		_, file, _, _ := runtime.Caller(0)
		cache = filepath.Join(filepath.Dir(file), "..", "..", "..", ".cache")
	}
	bins, _ := filepath.Glob(filepath.Join(cache, "objstores", "minio-*", "minio"))
	if len(bins) > 0 {
		return bins[len(bins)-1]
	}
	msg := "no MinIO binary under " + cache + "/objstores: run `hack/objstores.sh up` (or set OBJSTORE_MINIO_BIN)"
	if os.Getenv(backendtest.RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// startTLSMinIO starts a MinIO serving HTTPS only, with pki's server certificate, on a free
// loopback port, and returns its endpoint once it answers; the server stops with the test.
func startTLSMinIO(t *testing.T, pki testPKI) string {
	t.Helper()
	bin := minioBinary(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(filepath.Join(certs, "CAs"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"public.crt": pki.certPEM, "private.key": pki.keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "server", "--quiet", "--address", addr, "--certs-dir", certs, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+tlsMinIOUser, "MINIO_ROOT_PASSWORD="+tlsMinIOPassword,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "HOME="+dir)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })

	endpoint := "https://" + addr
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint
			}
		}
		select {
		case <-exited:
			t.Fatalf("MinIO exited before it served HTTPS on %s:\n%s", addr, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("MinIO did not serve HTTPS on %s within 60s (last error %v):\n%s", addr, err, logs.String())
		}
	}
}

func awsSecret() map[string][]byte {
	return map[string][]byte{"credentials": []byte(fmt.Sprintf(
		"[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", tlsMinIOUser, tlsMinIOPassword))}
}
