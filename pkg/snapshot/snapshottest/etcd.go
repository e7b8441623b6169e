// Package snapshottest starts real etcd processes for tests of the snapshot package and the
// backup controllers, with the binaries hack/build-etcd.sh builds into .cache/bin.
package snapshottest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Version is the etcd version the tests run.
const Version = "v3.6.16"

// BinDir is the directory with etcd, etcdctl and etcdutl (ETCD_BIN_DIR overrides it).
func BinDir() string {
	if d := os.Getenv("ETCD_BIN_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", ".cache", "bin", "etcd-"+Version)
}

// Bin returns the path of an etcd binary, skipping the test when it was not built.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not built (run hack/build-etcd.sh): %v", p, err)
	}
	return p
}

// Etcd is a single-member etcd process on loopback ports.
type Etcd struct {
	Endpoint string
	DataDir  string
	cmd      *exec.Cmd
	done     chan error
	stop     sync.Once
	certs    *Certs
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartEtcd starts etcd on a fresh data dir (or dataDir when non-empty) and waits until it
// serves; the test's cleanup stops it.
func StartEtcd(t testing.TB, dataDir string) *Etcd {
	t.Helper()
	return start(t, dataDir, nil)
}

// StartEtcdTLS starts etcd serving clients over https with client certificate auth.
func StartEtcdTLS(t testing.TB, certs *Certs) *Etcd {
	t.Helper()
	return start(t, "", certs)
}

func start(t testing.TB, dataDir string, certs *Certs) *Etcd {
	t.Helper()
	// FreePort's ports are free when chosen but may be taken by another process (a parallel
	// test package) before etcd binds them: start again on new ports then.
	for attempt := 1; ; attempt++ {
		e, out, err := launch(t, dataDir, certs)
		if err == nil {
			return e
		}
		if attempt < 5 && strings.Contains(out, "address already in use") {
			continue
		}
		t.Fatalf("%v\n%s", err, out)
	}
}

// launch starts one etcd process and waits until it serves; on failure it returns the error
// and etcd's log.
func launch(t testing.TB, dataDir string, certs *Certs) (*Etcd, string, error) {
	t.Helper()
	bin := Bin(t, "etcd")
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
	}
	scheme := "http"
	if certs != nil {
		scheme = "https"
	}
	client := scheme + "://127.0.0.1:" + strconv.Itoa(FreePort(t))
	peer := "http://127.0.0.1:" + strconv.Itoa(FreePort(t))
	args := []string{
		"--name", "default",
		"--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default=" + peer,
		"--log-level", "error",
	}
	if certs != nil {
		args = append(args, certs.ServerArgs()...)
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	e := &Etcd{Endpoint: client, DataDir: dataDir, cmd: cmd, done: make(chan error, 1), certs: certs}
	go func() { e.done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(e.Stop)
	cli := e.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Status(ctx, client)
		cancel()
		if err == nil {
			return e, "", nil
		}
		if time.Now().After(deadline) {
			e.Stop()
			out, _ := os.ReadFile(logf.Name())
			return nil, string(out), fmt.Errorf("etcd at %s not ready: %w", client, err)
		}
		select {
		case err := <-e.done:
			out, _ := os.ReadFile(logf.Name())
			return nil, string(out), fmt.Errorf("etcd exited: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Client returns a client of the member, closed when the test ends.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if e.certs != nil {
		tlsCfg, err := tlsConfig(e.certs)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Stop kills the process (SIGKILL, as a crash would) and waits for it.
func (e *Etcd) Stop() {
	e.stop.Do(func() {
		_ = e.cmd.Process.Kill()
		select {
		case err := <-e.done:
			_ = err // killed on purpose: its exit status says nothing
		case <-time.After(10 * time.Second):
		}
	})
}

// Put writes n keys key-00000000 ... with values of size valueSize.
func Put(t testing.TB, cli *clientv3.Client, prefix string, n, valueSize int) {
	t.Helper()
	val := make([]byte, valueSize)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("%s%08d", prefix, i), string(val))
		cancel()
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}
