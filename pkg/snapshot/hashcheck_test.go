package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// marker is a value written once, so that a test store can find it in the snapshot's bytes.
const marker = "hashkv-marker-value-0123456789"

// checkedEtcd starts etcd with a keyspace that has history: puts, overwrites, deletes, a
// compaction and the marker value, so that the hashes cover every case etcd's HashKV handles.
func checkedEtcd(t *testing.T, dir string) (*snapshottest.Etcd, *clientv3.Client) {
	t.Helper()
	e := &snapshottest.Etcd{}
	if dir == "" {
		e = snapshottest.StartEtcd(t, "")
	} else {
		e = snapshottest.NewEtcd(t, "default", nil)
		e.Dir = dir
		e.Start(t, snapshottest.InitialCluster(e), "new")
		e.WaitReady(t)
	}
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/k/", 200, 256)
	snapshottest.Put(t, cli, "/k/", 100, 128) // overwrites half of them
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Delete(ctx, "/k/0000015", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	put, err := cli.Put(ctx, "/marker", marker)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, put.Header.Revision-20); err != nil {
		t.Fatal(err)
	}
	snapshottest.Put(t, cli, "/after/", 10, 64)
	return e, cli
}

func checkConfig(t *testing.T, endpoint string) *snapshot.Config {
	t.Helper()
	cfg := config(endpoint)
	cfg.CheckHashKV, cfg.TempDir = true, t.TempDir()
	t.Cleanup(func() {
		if left, _ := os.ReadDir(cfg.TempDir); len(left) != 0 {
			t.Errorf("the check left %d files in its TempDir", len(left))
		}
	})
	return cfg
}

// TestTakeHashKV: with the check on, a backup records the keyspace hash that the live member's
// HashKV returns at the snapshot's revision, with etcd 3.6 and 3.5.
func TestTakeHashKV(t *testing.T) {
	for name, dir := range map[string]string{"3.6": "", "3.5": snapshottest.BinDirOf(snapshottest.OldVersion)} {
		t.Run(name, func(t *testing.T) {
			e, cli := checkedEtcd(t, dir)
			res, err := snapshot.Take(t.Context(), checkConfig(t, e.Endpoint), memory.New())
			if err != nil {
				t.Fatal(err)
			}
			got := res.HashKV
			if !got.Checked || got.Skipped != "" || got.Revision != res.Member.Revision || got.CompactRevision <= 0 {
				t.Fatalf("check = %+v, member revision %d", got, res.Member.Revision)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			live, err := cli.HashKV(ctx, e.Endpoint, got.Revision)
			if err != nil {
				t.Fatal(err)
			}
			if live.Hash != got.Hash || live.CompactRevision != got.CompactRevision {
				t.Fatalf("live HashKV %d (compacted at %d), check recorded %d (%d)", live.Hash, live.CompactRevision, got.Hash, got.CompactRevision)
			}
			t.Logf("checked: %+v", got)
		})
	}
}

// corruptingBackend stores the snapshot after change altered it (the whole stream is buffered:
// test snapshots are small).
type corruptingBackend struct {
	backend.Backend
	change func([]byte) []byte
}

func (c *corruptingBackend) Put(ctx context.Context, key string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return c.Backend.Put(ctx, key, bytes.NewReader(c.change(data)))
}

// changeMarker rewrites every copy of the marker value in a snapshot to another value of the
// same length (bbolt pages carry no checksum, so the file stays valid) and, with trailer,
// computes etcd's sha256 trailer again: a store that hands back a valid snapshot of another
// keyspace.
func changeMarker(t *testing.T, trailer bool) func([]byte) []byte {
	return func(data []byte) []byte {
		if !bytes.Contains(data, []byte(marker)) {
			t.Errorf("the snapshot does not hold the marker value")
		}
		out := bytes.ReplaceAll(data, []byte(marker), []byte(strings.ToUpper(marker)))
		if trailer {
			body := len(out) - sha256.Size
			sum := sha256.Sum256(out[:body])
			copy(out[body:], sum[:])
		}
		return out
	}
}

// TestTakeHashKVMismatch: a stored object that is not the member's keyspace fails the backup and
// is deleted. With etcd's trailer recomputed only the keyspace hash can tell; without, reading
// the object back fails etcd's checksum.
func TestTakeHashKVMismatch(t *testing.T) {
	e, _ := checkedEtcd(t, "")
	for _, tc := range []struct {
		name    string
		trailer bool
		want    error
	}{
		{"valid snapshot of another keyspace", true, snapshot.ErrHashMismatch},
		{"corrupt object", false, snapshot.ErrChecksumMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New()
			b := &corruptingBackend{Backend: mem, change: changeMarker(t, tc.trailer)}
			res, err := snapshot.Take(t.Context(), checkConfig(t, e.Endpoint), b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if infos, err := mem.List(t.Context(), ""); err != nil || len(infos) != 0 {
				t.Fatalf("objects after a failed check: %v, %v", infos, err)
			}
			if res.HashKV.Checked {
				t.Fatalf("check = %+v", res.HashKV)
			}
			t.Logf("%s: %v", tc.name, err)
		})
	}
}

// hookBackend runs onGet once before the first Get: the check's read-back, between the upload
// and the member's HashKV.
type hookBackend struct {
	backend.Backend
	once  sync.Once
	onGet func()
}

func (h *hookBackend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	h.once.Do(h.onGet)
	return h.Backend.Get(ctx, key)
}

// TestTakeHashKVCompactedOrGone: a check that cannot compare leaves the backup standing and says
// why: the member compacted past the snapshot's revision, or below it after the snapshot (the
// hashes then cover different revisions), or went away. A compaction at exactly the snapshot's
// revision still compares: etcd keeps the hash it computed for that revision before compacting.
func TestTakeHashKVCompactedOrGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act runs before the check asks the member; rev is the member's revision at the
		// snapshot.
		act func(t *testing.T, e *snapshottest.Etcd, cli *clientv3.Client, rev int64)
		// skipped is what HashKVCheck.Skipped contains; "" for a comparison.
		skipped string
	}{
		{"compacted past the snapshot", func(t *testing.T, _ *snapshottest.Etcd, cli *clientv3.Client, _ int64) {
			compact(t, cli, putKey(t, cli))
		}, "compacted past revision"},
		{"compacted below the snapshot", func(t *testing.T, _ *snapshottest.Etcd, cli *clientv3.Client, rev int64) {
			putKey(t, cli)
			compact(t, cli, rev-5)
		}, "the hashes are not comparable"},
		{"compacted at the snapshot", func(t *testing.T, _ *snapshottest.Etcd, cli *clientv3.Client, rev int64) {
			putKey(t, cli)
			compact(t, cli, rev)
		}, ""},
		{"member gone", func(_ *testing.T, e *snapshottest.Etcd, _ *clientv3.Client, _ int64) {
			e.Stop()
		}, "HashKV of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, cli := checkedEtcd(t, "")
			cfg := checkConfig(t, e.Endpoint)
			cfg.RequestTimeout = 2 * time.Second
			members, err := snapshot.Members(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			m, err := snapshot.Pick(members)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.New()
			b := &hookBackend{Backend: mem, onGet: func() { tc.act(t, e, cli, m.Revision) }}
			// The member going away must not hold the backup until its whole timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := snapshot.TakeFrom(ctx, cfg, m, b)
			if err != nil {
				t.Fatalf("the backup failed: %v", err)
			}
			if res.HashKV.Checked != (tc.skipped == "") || !strings.Contains(res.HashKV.Skipped, tc.skipped) {
				t.Fatalf("check = %+v, want skipped with %q", res.HashKV, tc.skipped)
			}
			if sum, _ := sha(t, mem, res.Key); sum != res.SHA256 {
				t.Fatalf("stored object sha256 %s, result %s", sum, res.SHA256)
			}
			t.Logf("%s: %+v", tc.name, res.HashKV)
		})
	}
}

func putKey(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	put, err := cli.Put(ctx, "/after-snapshot", "x")
	if err != nil {
		t.Fatal(err)
	}
	return put.Header.Revision
}

func compact(t *testing.T, cli *clientv3.Client, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
}
