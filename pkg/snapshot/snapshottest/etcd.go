// Package snapshottest starts real etcd processes for tests (one member, or several that form a
// cluster), with the binaries hack/build-etcd.sh builds into .cache/bin: the one way the
// project's tests run a real etcd (pkg/snapshot, pkg/cluster, the backup, schedule and restore
// controllers, the restore agent).
package snapshottest

import (
	"context"
	"fmt"
	"io"
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

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
)

// Version is the etcd version the tests run.
const Version = "v3.6.16"

// OldVersion is the etcd 3.5 release the tests also run where a behaviour differs between
// minor releases (hack/lib.sh ETCD_OLD_VERSION; hack/test.sh builds it).
const OldVersion = "v3.5.35"

// BinDir is the directory with etcd, etcdctl and etcdutl (ETCD_BIN_DIR overrides it).
func BinDir() string {
	if d := os.Getenv("ETCD_BIN_DIR"); d != "" {
		return d
	}
	return BinDirOf(Version)
}

// BinDirOf is the directory hack/build-etcd.sh builds version into.
func BinDirOf(version string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", ".cache", "bin", "etcd-"+version)
}

// Bin returns the path of an etcd binary, skipping the test when it was not built.
func Bin(t testing.TB, name string) string {
	t.Helper()
	return BinIn(t, BinDir(), name)
}

// BinIn returns the path of binary name in dir, skipping the test when it was not built.
func BinIn(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not built (run hack/build-etcd.sh): %v", p, err)
	}
	return p
}

// ReadyTimeout bounds how long WaitReady waits for a member to answer (a cold start on a
// loaded CI machine takes a few seconds).
const ReadyTimeout = 30 * time.Second

// statusTimeout bounds one Status call while WaitReady polls.
const statusTimeout = 2 * time.Second

// Etcd is one etcd member process for a test, on loopback ports reserved for the test
// (ReservePort), logging to a file that a failed start prints.
type Etcd struct {
	Name     string
	Endpoint string // client URL
	PeerURL  string
	DataDir  string
	// Args are extra etcd flags (a bench raises --quota-backend-bytes); set before Start.
	Args []string
	// Dir is where the etcd binary is (BinDir when empty); set before Start to run another
	// release (BinDirOf(OldVersion)).
	Dir   string
	cmd   *exec.Cmd
	log   string
	done  chan error
	stop  sync.Once
	certs *Certs
}

// StartEtcd starts a one-member etcd on a fresh data dir (or dataDir when non-empty) and waits
// until it serves; the test's cleanup stops it.
func StartEtcd(t testing.TB, dataDir string) *Etcd {
	t.Helper()
	return startSingle(t, dataDir, nil)
}

// StartEtcdTLS starts a one-member etcd serving clients over https with client certificate
// auth.
func StartEtcdTLS(t testing.TB, certs *Certs) *Etcd {
	t.Helper()
	return startSingle(t, "", certs)
}

func startSingle(t testing.TB, dataDir string, certs *Certs) *Etcd {
	t.Helper()
	e := NewEtcd(t, "default", certs)
	if dataDir != "" {
		e.DataDir = dataDir
	}
	e.Start(t, InitialCluster(e), "new")
	e.WaitReady(t)
	return e
}

// NewEtcd reserves the ports of a member named name, with a fresh data dir (set DataDir before
// Start to use another); clients talk https with client certificate auth when certs is
// non-nil. Nothing runs until Start.
func NewEtcd(t testing.TB, name string, certs *Certs) *Etcd {
	t.Helper()
	scheme := "http"
	if certs != nil {
		scheme = "https"
	}
	return &Etcd{
		Name:     name,
		Endpoint: scheme + "://127.0.0.1:" + strconv.Itoa(ReservePort(t)),
		PeerURL:  "http://127.0.0.1:" + strconv.Itoa(ReservePort(t)),
		DataDir:  filepath.Join(t.TempDir(), name),
		certs:    certs,
	}
}

// InitialCluster is etcd's --initial-cluster for members ("name=peerURL,...").
func InitialCluster(members ...*Etcd) string {
	s := make([]string, len(members))
	for i, m := range members {
		s[i] = m.Name + "=" + m.PeerURL
	}
	return strings.Join(s, ",")
}

// Start runs the member until the test ends or Stop. initialCluster is etcd's --initial-cluster,
// state its --initial-cluster-state: "new" for a cluster's first members, "existing" for a
// member added to a running cluster. Start does not wait: a member of a new cluster of several
// serves only once a quorum runs (WaitReady waits).
func (e *Etcd) Start(t testing.TB, initialCluster, state string) {
	t.Helper()
	args := []string{
		"--name", e.Name,
		"--data-dir", e.DataDir,
		"--listen-client-urls", e.Endpoint, "--advertise-client-urls", e.Endpoint,
		"--listen-peer-urls", e.PeerURL, "--initial-advertise-peer-urls", e.PeerURL,
		"--initial-cluster", initialCluster, "--initial-cluster-state", state,
		"--socket-reuse-port", // to listen on the ports ReservePort holds
		"--log-level", "error",
	}
	if e.certs != nil {
		args = append(args, e.certs.ServerArgs()...)
	}
	args = append(args, e.Args...)
	dir := e.Dir
	if dir == "" {
		dir = BinDir()
	}
	e.cmd = exec.Command(BinIn(t, dir, "etcd"), args...)
	e.log = filepath.Join(t.TempDir(), "etcd-"+e.Name+".log")
	logf, err := os.Create(e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("starting etcd %s: %v", e.Name, err)
	}
	e.done = make(chan error, 1)
	go func() { e.done <- e.cmd.Wait(); logf.Close() }()
	t.Cleanup(e.Stop)
}

// WaitReady waits until the member answers a Status call, and fails the test with the member's
// log if it exits or ReadyTimeout passes first.
func (e *Etcd) WaitReady(t testing.TB) {
	t.Helper()
	cli := e.Client(t)
	err := poll.Until(context.Background(), 100*time.Millisecond, ReadyTimeout, func(ctx context.Context) (bool, error) {
		select {
		case err := <-e.done:
			e.done <- err // for Stop
			return false, fmt.Errorf("etcd exited: %w", err)
		default:
		}
		ctx, cancel := context.WithTimeout(ctx, statusTimeout)
		defer cancel()
		_, err := cli.Status(ctx, e.Endpoint)
		return err == nil, err
	})
	if err != nil {
		out, _ := os.ReadFile(e.log)
		t.Fatalf("etcd %s at %s not ready: %v\n%s", e.Name, e.Endpoint, err, out)
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

// EnableAuth turns authentication on in the etcd cli talks to: user root with password and the
// root role, as `etcdctl user add root && etcdctl auth enable` would.
func EnableAuth(t testing.TB, cli *clientv3.Client, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.UserAdd(ctx, "root", password); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
}

// SaveSnapshot streams a snapshot of the member at endpoint into a file, as a backup does (the
// bbolt file and etcd's sha256 trailer), and returns the file and the member's revision, read
// just before: the snapshot's revision when nothing writes meanwhile.
func SaveSnapshot(t testing.TB, cli *clientv3.Client, endpoint string) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	file := filepath.Join(t.TempDir(), "snapshot.db")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return file, st.Header.Revision
}
