package volumeserver

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// TestServesThenExitsWhenIdle: the server serves the directory to a client with the token,
// keeps serving while requests come, and returns by itself once none came for the idle timeout.
func TestServesThenExitsWhenIdle(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const idle = 2 * time.Second // far above a request's time on a loaded machine
	done := make(chan error, 1)
	go func() {
		done <- Serve(t.Context(), Options{Dir: dir, TokenFile: tokenFile, IdleTimeout: idle}, ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	c, err := volume.New(volume.Config{Endpoint: "http://" + ln.Addr().String(), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	// Requests for longer than the idle timeout keep it serving.
	var lastReq time.Time
	for i := range 4 {
		if i > 0 {
			time.Sleep(idle / 4) //nolint:forbidigo // proves the server does NOT stop while requests keep coming within the idle timeout
		}
		if err := c.Put(t.Context(), "dir/obj", strings.NewReader(strings.Repeat("x", i))); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		lastReq = time.Now()
	}
	if got, err := os.ReadFile(filepath.Join(dir, "dir", "obj")); err != nil || string(got) != "xxx" {
		t.Fatalf("the volume holds %q, %v; want the last object", got, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop once idle")
	}
	if quiet := time.Since(lastReq); quiet < idle {
		t.Fatalf("stopped %s after the last request, before the idle timeout %s", quiet, idle)
	}
}

func TestParse(t *testing.T) {
	var out strings.Builder
	if _, err := parse([]string{"--dir", "/x"}, &out); err == nil || !strings.Contains(out.String(), "--token-file") {
		t.Fatalf("parse without --token-file = %v, %q; want the usage", err, out.String())
	}
	o, err := parse([]string{"--token-file", "/t", "--idle-timeout", "2m"}, &out)
	if err != nil || o.Dir != "/backups" || o.IdleTimeout != 2*time.Minute || o.Listen != ":8080" {
		t.Fatalf("parse = %+v, %v", o, err)
	}
}

// TestServesHTTPSToPinnedClients: with the Secret's certificate and key, as the pod mounts
// them, the server speaks HTTPS only, and a client made from the Secret's data reads what was
// written through it (files on the volume's directory).
func TestServesHTTPSToPinnedClients(t *testing.T) {
	dir, secret := t.TempDir(), t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	creds, err := volume.NewCredentials("https://localhost:"+strconv.Itoa(port), []string{"localhost"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range creds.Data() {
		if err := os.WriteFile(filepath.Join(secret, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Dir: dir, TokenFile: filepath.Join(secret, volume.SecretTokenKey),
		CertFile: filepath.Join(secret, volume.SecretCertKey), KeyFile: filepath.Join(secret, volume.SecretKeyKey)}
	go func() { _ = Serve(t.Context(), o, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	cfg, err := volume.ClientConfig(creds.Data())
	if err != nil {
		t.Fatal(err)
	}
	c, err := volume.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(t.Context(), "team/etcd.backup", strings.NewReader("snapshot")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "team", "etcd.backup")); err != nil || string(got) != "snapshot" {
		t.Fatalf("file on the volume = %q, %v", got, err)
	}
	plain, _ := volume.New(volume.Config{Endpoint: "http://localhost:" + strconv.Itoa(port), Token: creds.Token})
	if _, err := plain.List(t.Context(), ""); err == nil {
		t.Fatal("a plain HTTP request was answered: the token would cross the network in the clear")
	}
}

func TestParseRefusesACertificateWithoutItsKey(t *testing.T) {
	var out strings.Builder
	if _, err := parse([]string{"--token-file", "/t", "--cert-file", "/c"}, &out); err == nil {
		t.Fatal("--cert-file without --key-file was accepted")
	}
}
