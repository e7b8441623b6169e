//go:build bench

package capture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

const (
	// fillTxnOps is how many puts one fill transaction holds (etcd's --max-txn-ops is 128).
	fillTxnOps = 128
	// loadTimeout bounds the fill and the changes.
	loadTimeout = 15 * time.Minute
	backupKey   = "restore/backup.db"
	prefix      = "restore/etcd.backup"
)

// restoreResult is the restore part's figures; times in seconds, one per run.
type restoreResult struct {
	Size        string  `json:"size"`
	Keys        int     `json:"keys"`
	SnapshotMiB float64 `json:"snapshotMiB"`
	Revisions   int64   `json:"revisionsReplayed"`
	Events      int64   `json:"eventsReplayed"`
	SegmentMiB  float64 `json:"segmentMiB"`
	Segments    int     `json:"segments"`
	// Verified: the replayed data hashed as the source member's HashKV at the last revision.
	Verified     bool      `json:"verified"`
	FullFetch    []float64 `json:"fullFetchSeconds"`
	FullEtcdutl  []float64 `json:"fullEtcdutlSeconds"`
	PointFetch   []float64 `json:"pointFetchSeconds"`
	PointReplay  []float64 `json:"pointReplaySeconds"`
	PointEtcdutl []float64 `json:"pointEtcdutlSeconds"`
}

// benchRestore fills a member with size bytes of keys, backs it up into MinIO, captures
// s.Changes changes after it with a child (the write burst's capture figures go to res), and
// times s.Runs full and point-in-time restores, alternated.
func benchRestore(t *testing.T, store s3.Config, s settings, size int64, res *results) *restoreResult {
	e := snapshottest.NewEtcd(t, "bench", nil)
	e.Args = []string{"--quota-backend-bytes", strconv.FormatInt(max(4<<30, 3*size+int64(s.Changes)*int64(4*s.ValueBytes)), 10)}
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	cli := e.Client(t)
	id := identity(t, cli, e.Endpoint)
	b, err := s3.New(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	clients := make([]*clientv3.Client, s.Clients)
	for i := range clients {
		clients[i] = e.Client(t)
	}
	keys := int(size / int64(s.ValueBytes))
	rr := &restoreResult{Size: benchutil.SizeName(size), Keys: keys}
	started := time.Now()
	if _, _, err := runLoad(t.Context(), clients[:min(4, len(clients))], (keys+fillTxnOps-1)/fillTxnOps, 0, loadTimeout, fillOp(keys, s.ValueBytes)); err != nil {
		t.Fatal(err)
	}
	snap, rev := snapshottest.SaveSnapshot(t, cli, e.Endpoint)
	st, err := os.Stat(snap)
	if err != nil {
		t.Fatal(err)
	}
	rr.SnapshotMiB = float64(st.Size()) / mib
	put(t, b, snap, backupKey)
	_ = os.Remove(snap)
	t.Logf("%s in %d keys, backup of %.0f MiB at revision %d in %s", rr.Size, keys, rr.SnapshotMiB, rev, time.Since(started).Round(time.Second))

	start := mark(t, cli)
	interval := s.Intervals[0]
	ch := startChild(t, childSpec{Endpoint: e.Endpoint, Prefix: prefix, Identity: id, Start: start, IntervalMs: interval})
	lat, took, err := runLoad(t.Context(), clients, s.Changes, 0, loadTimeout, changeOp(keys, s.ValueBytes))
	if err != nil {
		t.Fatal(err)
	}
	end := revision(t, cli)
	cs := stats(t, b, prefix, id, start, end, ch.stop(t, end))
	cs.Label, cs.IntervalMs = fmt.Sprintf("burst after the %s backup: %d changes in %.0f s (%.0f/s, write p99 %.1f ms)", rr.Size, s.Changes, took.Seconds(), float64(s.Changes)/took.Seconds(), ms(percentile(lat, 0.99))), interval
	res.Captures = append(res.Captures, cs)
	rr.SegmentMiB = cs.MiB
	t.Logf("%d changes in %s; capture RSS %.0f MiB, lag p50 %.0f ms p99 %.0f ms", s.Changes, took.Round(time.Millisecond), cs.PeakRSSMiB, cs.LagP50Ms, cs.LagP99Ms)

	for i := range s.Runs {
		kinds := []func(){func() { fullRestore(t, b, rr) }, func() { pointRestore(t, b, id, rev, rr, cli, e.Endpoint, end) }}
		if i%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		for _, k := range kinds {
			k()
		}
		t.Logf("run %d: full %.1f + %.1f s, point in time %.1f + %.1f + %.1f s", i, rr.FullFetch[i], rr.FullEtcdutl[i], rr.PointFetch[i], rr.PointReplay[i], rr.PointEtcdutl[i])
	}
	return rr
}

// fillOp writes keys keys of valueBytes random bytes, fillTxnOps per transaction (request i).
func fillOp(keys, valueBytes int) op {
	return func(ctx context.Context, cli *clientv3.Client, w, i int) error {
		rng := rand.NewChaCha8([32]byte{byte(w), byte(i), byte(i >> 8), byte(i >> 16)})
		ops := make([]clientv3.Op, 0, fillTxnOps)
		for k := i * fillTxnOps; k < min(keys, (i+1)*fillTxnOps); k++ {
			v := make([]byte, valueBytes)
			_, _ = rng.Read(v)
			ops = append(ops, clientv3.OpPut(fillKey(k), string(v)))
		}
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		return err
	}
}

func fillKey(k int) string { return fmt.Sprintf("/fill/%08d", k) }

// changeOp is the change load after the backup: of every 20 requests one deletes a key of the
// backup (the first quarter of the keys, each once), one creates a key, the rest overwrite a
// random key of the other three quarters. Every request is one revision.
func changeOp(keys, valueBytes int) op {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueBytes)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(value)
	deletable := keys / 4
	return func(ctx context.Context, cli *clientv3.Client, _, i int) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		var err error
		switch {
		case i%20 == 0 && i/20 < deletable:
			_, err = cli.Delete(ctx, fillKey(i/20))
		case i%20 == 1:
			_, err = cli.Put(ctx, fmt.Sprintf("/new/%08d", i), string(value))
		default:
			mu.Lock()
			k := deletable + rng.IntN(keys-deletable)
			mu.Unlock()
			_, err = cli.Put(ctx, fillKey(k), string(value))
		}
		return err
	}
}

// fullRestore times a full restore as the restore agent makes it: the backup downloaded and
// checked (restoreseed.Fetch), then `etcdutl snapshot restore` (--skip-hash-check: the download
// checked etcd's sha256).
func fullRestore(t *testing.T, b backend.Backend, rr *restoreResult) {
	dir := t.TempDir()
	defer os.RemoveAll(dir)
	snap := filepath.Join(dir, "snapshot.db")
	start := time.Now()
	fetch(t, b, snap)
	fetched := time.Now()
	etcdutl(t, snap, filepath.Join(dir, "data"))
	rr.FullFetch = append(rr.FullFetch, fetched.Sub(start).Seconds())
	rr.FullEtcdutl = append(rr.FullEtcdutl, time.Since(fetched).Seconds())
}

// pointRestore times a restore to the newest captured revision as the agent makes it: the
// download, etcd's trailer cut off, capture.Replay, `etcdutl snapshot restore`. The first one
// also checks the replayed data against the source member's HashKV at end (not timed).
func pointRestore(t *testing.T, b backend.Backend, id snapshot.Identity, base int64, rr *restoreResult, cli *clientv3.Client, endpoint string, end int64) {
	dir := t.TempDir()
	defer os.RemoveAll(dir)
	snap := filepath.Join(dir, "snapshot.db")
	start := time.Now()
	size := fetch(t, b, snap)
	fetched := time.Now()
	if err := os.Truncate(snap, size-snapshot.TrailerSize); err != nil {
		t.Fatal(err)
	}
	rep, err := capture.Replay(t.Context(), b, prefix, id, snap, capture.Target{}, capture.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replayed := time.Now()
	etcdutl(t, snap, filepath.Join(dir, "data"))
	rr.PointFetch = append(rr.PointFetch, fetched.Sub(start).Seconds())
	rr.PointReplay = append(rr.PointReplay, replayed.Sub(fetched).Seconds())
	rr.PointEtcdutl = append(rr.PointEtcdutl, time.Since(replayed).Seconds())
	if rep.From != base+1 || rep.Revision != end {
		t.Fatalf("replayed %d-%d, want %d-%d", rep.From, rep.Revision, base+1, end)
	}
	rr.Revisions, rr.Events, rr.Segments = rep.Revisions, rep.Events, rep.Segments
	if rr.Verified {
		return
	}
	got, err := kvhash.File(snap, end, kvhash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	want, err := cli.HashKV(ctx, endpoint, end)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != want.Hash {
		t.Fatalf("replayed data at revision %d: hash %d, the member's HashKV %d", end, got.Hash, want.Hash)
	}
	rr.Verified = true
}

// fetch downloads the backup into file as the restore agent does, and returns its size.
func fetch(t *testing.T, b backend.Backend, file string) int64 {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := restoreseed.Fetch(t.Context(), b, backupKey, restoreseed.Expect{}, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.Size
}

// etcdutl restores snap into dataDir as the restore agent runs it.
func etcdutl(t *testing.T, snap, dataDir string) {
	const peer = "http://127.0.0.1:2380"
	out, err := exec.CommandContext(t.Context(), snapshottest.Bin(t, "etcdutl"), "snapshot", "restore", snap, "--skip-hash-check",
		"--data-dir", dataDir, "--name", "bench", "--initial-cluster", "bench="+peer, "--initial-advertise-peer-urls", peer).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
}

// put stores file under key.
func put(t *testing.T, b backend.Backend, file, key string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := b.Put(t.Context(), key, f); err != nil {
		t.Fatal(err)
	}
}
