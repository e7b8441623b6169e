package volumeserver

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
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
