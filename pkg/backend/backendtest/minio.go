package backendtest

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
)

// Credentials of the MinIO servers StartTLSMinIO starts.
const (
	MinIOUser     = "etcd-suite"
	MinIOPassword = "etcd-suite-secret-key"
)

// minioStartTimeout bounds the wait for a started MinIO to answer its health check.
const minioStartTimeout = 60 * time.Second

// MinIOBinary returns the MinIO server hack/objstores.sh built under .cache/objstores (or
// $OBJSTORE_MINIO_BIN); without one the test skips, or fails when RequireEnv is 1.
func MinIOBinary(t testing.TB) string {
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
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// StartTLSMinIO starts a MinIO that serves HTTPS only, with the PEM server certificate and key
// (signed by caPEM), on a free port of host (an IP address), and returns its endpoint once it
// answers. The server and its data stop and go with the test.
func StartTLSMinIO(t testing.TB, host string, certPEM, keyPEM, caPEM []byte) string {
	t.Helper()
	bin := MinIOBinary(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(filepath.Join(certs, "CAs"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"public.crt": certPEM, "private.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "server", "--quiet", "--address", addr, "--certs-dir", certs, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+MinIOUser, "MINIO_ROOT_PASSWORD="+MinIOPassword,
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
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(minioStartTimeout)
	for {
		resp, err := client.Get(endpoint + "/minio/health/live") //nolint:noctx // bounded by the client timeout and the deadline
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
			t.Fatalf("MinIO did not serve HTTPS on %s within %s (last error %v):\n%s", addr, minioStartTimeout, err, logs.String())
		}
	}
}

// MinIOSecret is the coreos awsSecret data of the MinIO servers StartTLSMinIO starts.
func MinIOSecret() map[string][]byte {
	return map[string][]byte{
		"credentials": fmt.Appendf(nil, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", MinIOUser, MinIOPassword),
		"config":      []byte("[default]\nregion = us-east-1\n"),
	}
}
