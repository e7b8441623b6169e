package snapshot_test

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

func config(endpoints ...string) *snapshot.Config {
	return &snapshot.Config{
		Endpoints:      endpoints,
		DialTimeout:    5 * time.Second,
		RequestTimeout: 5 * time.Second,
		Key:            func(rev int64, start time.Time) string { return snapshot.ObjectKey("bk/etcd.backup", rev, start) },
	}
}

func sha(t *testing.T, b backend.Backend, key string) (string, int64) {
	t.Helper()
	return snapshottest.ObjectSHA256(t, b, key)
}

// TestTakeRestores backs up a real etcd into the memory and local backends, checks the stored
// object's sha256 and size, restores it with etcdutl, starts etcd on the restored data and
// counts the keys.
func TestTakeRestores(t *testing.T) {
	etcdutl := snapshottest.Bin(t, "etcdutl")
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	const keys = 500
	snapshottest.Put(t, cli, "/k/", keys, 512)

	dir := t.TempDir()
	lb, err := local.New(t.Context(), local.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// An unreachable endpoint first: the healthy one must be picked.
	cfg := config("http://127.0.0.1:1", e.Endpoint)
	for name, b := range map[string]backend.Backend{"memory": memory.New(), "local": lb} {
		t.Run(name, func(t *testing.T) {
			res, err := snapshot.Take(t.Context(), cfg, b)
			if err != nil {
				t.Fatal(err)
			}
			if res.Member.Endpoint != e.Endpoint || res.Member.Revision < keys || res.Member.Version != "3.6.16" {
				t.Fatalf("member = %+v", res.Member)
			}
			info, ok := snapshot.ParseKey("bk/etcd.backup", res.Key)
			if !ok || info.Revision != res.Member.Revision {
				t.Fatalf("key %q parses as %+v, %t", res.Key, info, ok)
			}
			gotSHA, gotSize := sha(t, b, res.Key)
			if gotSHA != res.SHA256 || gotSize != res.Size {
				t.Fatalf("stored sha256/size %s/%d, result says %s/%d", gotSHA, gotSize, res.SHA256, res.Size)
			}
			if res.Timeout != snapshot.MinTimeout {
				t.Fatalf("timeout = %s", res.Timeout)
			}
		})
	}

	// Restore the object the local backend wrote, with etcdutl (which checks the trailer again).
	infos, err := lb.List(t.Context(), "bk/")
	if err != nil || len(infos) != 1 {
		t.Fatalf("List = %v, %v", infos, err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	out, err := exec.Command(etcdutl, "snapshot", "restore", filepath.Join(dir, infos[0].Key),
		"--data-dir", restored).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	r := snapshottest.StartEtcd(t, restored)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := r.Client(t).Get(ctx, "/k/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != keys {
		t.Fatalf("restored cluster holds %d keys, want %d", resp.Count, keys)
	}
}

// killingBackend kills etcd after the first bytes of the snapshot reached the upload.
type killingBackend struct {
	backend.Backend
	after int64
	kill  func()
}

func (k *killingBackend) Put(ctx context.Context, key string, r io.Reader) error {
	return k.Backend.Put(ctx, key, &killingReader{r: r, after: k.after, kill: k.kill})
}

type killingReader struct {
	r     io.Reader
	n     int64
	after int64
	kill  func()
	done  atomic.Bool
}

func (k *killingReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	k.n += int64(n)
	if k.n > k.after && k.done.CompareAndSwap(false, true) {
		k.kill()
	}
	return n, err
}

// TestTakeStreamCutLeavesNoObject kills etcd in the middle of a snapshot of a ~60 MB database:
// the backup fails with ErrStream (or a verification error) and no object is visible.
func TestTakeStreamCutLeavesNoObject(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 60 MB database")
	}
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/big/", 1500, 40<<10)
	mem := memory.New()
	b := &killingBackend{Backend: mem, after: 1 << 20, kill: e.Stop}
	_, err := snapshot.Take(t.Context(), config(e.Endpoint), b)
	if err == nil {
		t.Fatal("backup succeeded although etcd was killed mid-stream")
	}
	if !errors.Is(err, snapshot.ErrStream) && !errors.Is(err, snapshot.ErrTruncated) && !errors.Is(err, snapshot.ErrChecksumMismatch) {
		t.Fatalf("err = %v, want a stream or verification error", err)
	}
	if infos, err := mem.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Fatalf("objects after a cut stream: %v, %v", infos, err)
	}
	t.Logf("cut stream: %v", err)
}

func TestTakeUnreachable(t *testing.T) {
	cfg := config("http://127.0.0.1:1")
	cfg.DialTimeout, cfg.RequestTimeout = time.Second, time.Second
	_, err := snapshot.Take(t.Context(), cfg, memory.New())
	if !errors.Is(err, snapshot.ErrNoHealthyMember) {
		t.Fatalf("err = %v, want ErrNoHealthyMember", err)
	}
}

// TestTakeTimeout: a backup that outlives its timeout fails with ErrTimeout and stores nothing.
func TestTakeTimeout(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/big/", 300, 40<<10) // ~12 MB
	cfg := config(e.Endpoint)
	cfg.Timeout = 50 * time.Millisecond
	mem := memory.New()
	slow := &killingBackend{Backend: mem, after: 1 << 20, kill: func() {
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // a backend that stalls past the snapshot timeout, on purpose
	}}
	_, err := snapshot.Take(t.Context(), cfg, slow)
	if !errors.Is(err, snapshot.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if infos, _ := mem.List(t.Context(), ""); len(infos) != 0 {
		t.Fatalf("objects after a timeout: %v", infos)
	}
}

// TestTakeTLS backs up an etcd that requires client certificates, with the TLS configuration
// built from a client TLS Secret's data; without it the member is unreachable.
func TestTakeTLS(t *testing.T) {
	certs := snapshottest.NewCerts(t)
	e := snapshottest.StartEtcdTLS(t, certs)
	snapshottest.Put(t, e.Client(t), "/tls/", 10, 16)
	tlsCfg, err := snapshot.TLSConfigFromSecret(certs.SecretData())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(e.Endpoint)
	cfg.Access.TLS = tlsCfg
	res, err := snapshot.Take(t.Context(), cfg, memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if res.Member.Endpoint != e.Endpoint || res.Size == 0 {
		t.Fatalf("result %+v", res)
	}
	plain := config(e.Endpoint)
	plain.DialTimeout, plain.RequestTimeout = time.Second, time.Second
	if _, err := snapshot.Take(t.Context(), plain, memory.New()); !errors.Is(err, snapshot.ErrNoHealthyMember) {
		t.Fatalf("without client TLS: err = %v, want ErrNoHealthyMember", err)
	}
	if _, err := snapshot.TLSConfigFromSecret(map[string][]byte{"etcd-client.crt": certs.ClientCert}); err == nil {
		t.Fatal("incomplete TLS secret accepted")
	}
}

// shortReadBackend stores only the first bytes of what it is given and reports success, as a
// broken provider might.
type shortReadBackend struct{ backend.Backend }

func (s shortReadBackend) Put(ctx context.Context, key string, r io.Reader) error {
	return s.Backend.Put(ctx, key, io.LimitReader(r, 1<<20))
}

// TestTakeBackendStoppingEarlyFails: a backend that returns without reading the stream to its
// verified end does not make a backup: Take fails with ErrStorage and removes the object.
func TestTakeBackendStoppingEarlyFails(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 200, 20<<10) // about 4 MB: more than the backend reads
	mem := memory.New()
	_, err := snapshot.Take(t.Context(), config(e.Endpoint), shortReadBackend{mem})
	if !errors.Is(err, snapshot.ErrStorage) {
		t.Fatalf("err = %v, want ErrStorage", err)
	}
	if infos, err := mem.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Fatalf("objects after a short upload: %v, %v", infos, err)
	}
}
