package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// captured is a full backup and the capture after it, with the source etcd still running.
type captured struct {
	cli      *clientv3.Client
	endpoint string
	b        backend.Backend
	id       snapshot.Identity
	// snap is the full backup's bbolt file (etcd's trailer cut off), at revision snapRev.
	snap    string
	snapRev int64
	// mid is a revision between two write loads, end the last revision captured.
	mid, end int64
	// leased is a key put after the backup with a lease granted after it, still alive.
	leased string
	lease  clientv3.LeaseID
}

// captureLoad backs up an etcd holding a keyspace with leases and a compaction, then captures
// two write loads (puts, overwrites, deletes, range deletes, transactions, leases granted and
// revoked) after it into MinIO.
func captureLoad(t *testing.T) *captured {
	t.Helper()
	e := snapshottest.StartEtcd(t, "")
	c := &captured{cli: e.Client(t), endpoint: e.Endpoint, b: s3Backend(t)}
	ctx := t.Context()
	st, err := c.cli.Status(ctx, e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c.id = snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: st.Header.ClusterId}
	if err := workload(ctx, c.cli, 9, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Compact(ctx, revision(t, c.cli)-50); err != nil {
		t.Fatal(err)
	}
	// A lease the backup holds, with a key, kept alive by its owner through the capture.
	old, err := c.cli.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Put(ctx, "/owned/before", "v", clientv3.WithLease(old.ID)); err != nil {
		t.Fatal(err)
	}
	snap, rev := snapshottest.SaveSnapshot(t, c.cli, e.Endpoint)
	c.snap, c.snapRev = cutTrailer(t, snap), rev

	r := run(t, testConfig(t, c.cli, c.b, c.id, rev+1))
	if err := startLoad(c.cli, 3, 300)(); err != nil {
		t.Fatal(err)
	}
	c.mid = revision(t, c.cli)
	l, err := c.cli.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	c.leased, c.lease = "/owned/after", l.ID
	if _, err := c.cli.Put(ctx, c.leased, "v", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Put(ctx, "/owned/before", "v2", clientv3.WithLease(old.ID)); err != nil {
		t.Fatal(err)
	}
	if err := startLoad(c.cli, 3, 300)(); err != nil {
		t.Fatal(err)
	}
	c.end = revision(t, c.cli)
	r.waitUploaded(t, c.end, 30*time.Second)
	if err := r.stop(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	return c
}

// cutTrailer copies a snapshot file without etcd's sha256 trailer: the bbolt file alone.
func cutTrailer(t *testing.T, snap string) string {
	t.Helper()
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(p, b[:len(b)-32], 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// replayCopy replays the capture onto a copy of the backup and returns the copy.
func (c *captured) replayCopy(t *testing.T, target Target) (string, Replayed, error) {
	t.Helper()
	b, err := os.ReadFile(c.snap)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Replay(t.Context(), c.b, testPrefix, c.id, p, target, ReplayOptions{})
	return p, res, err
}

// sameHash fails unless the data at path hashes, at rev, as the source serves it.
func (c *captured) sameHash(t *testing.T, path string, rev int64) {
	t.Helper()
	got, err := kvhash.File(path, rev, kvhash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.cli.HashKV(t.Context(), c.endpoint, rev)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.cli.Get(t.Context(), "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != want.Hash || got.Keys != n.Count || got.CurrentRevision != rev {
		t.Fatalf("replayed data: hash %d, %d keys, at revision %d; etcd at %d serves hash %d, %d keys", got.Hash, got.Keys, got.CurrentRevision, rev, want.Hash, n.Count)
	}
}

// TestReplayMatchesEtcd: a full backup replayed to a revision, to a time, and to the newest
// captured point holds exactly the source's keyspace at that point: the same HashKV (every
// revision of every key since the compaction, values, create and mod revisions, versions and
// leases) and key count. The newest, restored with etcdutl and run by etcd, serves the
// source's keys one by one, and keys put after the backup with a lease keep that lease.
func TestReplayMatchesEtcd(t *testing.T) {
	c := captureLoad(t)

	t.Run("revision", func(t *testing.T) {
		p, res, err := c.replayCopy(t, Target{Revision: c.mid})
		if err != nil {
			t.Fatal(err)
		}
		if res.From != c.snapRev+1 || res.Revision != c.mid || res.Revisions != c.mid-c.snapRev || !res.Exact {
			t.Fatalf("Replayed %+v, want revisions %d to %d, exact", res, c.snapRev+1, c.mid)
		}
		c.sameHash(t, p, c.mid)
		// Resolve finds the same point without data.
		if got, err := Resolve(t.Context(), c.b, testPrefix, c.id, c.snapRev, Target{Revision: c.mid}); err != nil || got.Revision != res.Revision || !got.Time.Equal(res.Time) || got.Revisions != res.Revisions || !got.Exact {
			t.Fatalf("Resolve = %+v, %v; Replay reached %+v", got, err, res)
		}
	})

	t.Run("time", func(t *testing.T) {
		// The target is the time a revision half way was received; the replay takes every
		// revision received until then (one watch response's revisions share a time).
		times := map[int64]time.Time{}
		segs, err := ListSegments(t.Context(), c.b, testPrefix, c.id)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range segs {
			if _, err := ReadSegment(t.Context(), c.b, o, func(rec Record) error { times[rec.Revision] = rec.Time; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		at := times[(c.snapRev+c.end)/2]
		want := int64(0)
		for rev, tm := range times {
			if !tm.After(at) {
				want = max(want, rev)
			}
		}
		p, res, err := c.replayCopy(t, Target{Time: at})
		if err != nil {
			t.Fatal(err)
		}
		if res.Revision != want || !res.Time.Equal(times[want]) || !res.Exact {
			t.Fatalf("Replayed %+v, want revision %d received %s, exact", res, want, times[want])
		}
		c.sameHash(t, p, want)
	})

	t.Run("newest", func(t *testing.T) {
		p, res, err := c.replayCopy(t, Target{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Revision != c.end || res.Exact {
			t.Fatalf("Replayed %+v, want revision %d, not exact (nothing after it)", res, c.end)
		}
		if got, err := Resolve(t.Context(), c.b, testPrefix, c.id, c.snapRev, Target{}); err != nil || got.Revision != c.end || got.Exact {
			t.Fatalf("Resolve = %+v, %v; want revision %d", got, err, c.end)
		}
		c.sameHash(t, p, c.end)
		got := runRestored(t, p)
		ctx := t.Context()
		live := getAll(ctx, t, c.cli, c.end)
		restored := getAll(ctx, t, got, c.end)
		if len(restored) != len(live) {
			t.Fatalf("restored etcd serves %d keys, the source %d at revision %d", len(restored), len(live), c.end)
		}
		for k, kv := range live {
			if !bytes.Equal(mustMarshal(t, kv), mustMarshal(t, restored[k])) {
				t.Fatalf("key %q: restored %v, the source has %v", k, restored[k], kv)
			}
		}
		ttl, err := got.TimeToLive(ctx, c.lease, clientv3.WithAttachedKeys())
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TTL <= 0 || ttl.TTL > DefaultReplayLeaseTTL || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != c.leased {
			t.Fatalf("lease granted after the backup, restored: TTL %d, keys %q; want at most %d s holding %q", ttl.TTL, ttl.Keys, DefaultReplayLeaseTTL, c.leased)
		}
	})

	t.Run("not captured", func(t *testing.T) {
		if _, _, err := c.replayCopy(t, Target{Revision: c.end + 10}); !errors.Is(err, ErrNotCaptured) {
			t.Fatalf("replay past the capture: %v, want ErrNotCaptured", err)
		}
	})
}

// TestReplayRefusesOtherData: a capture replayed onto data it does not continue fails at the
// first change that does not apply (another cluster's data at the same revision: its first
// changes, new keys, apply to any data) and leaves the data as it was, having committed
// nothing; and data whose revision is past the target is refused.
func TestReplayRefusesOtherData(t *testing.T) {
	c := captureLoad(t)
	other := snapshottest.StartEtcd(t, "")
	ocli := other.Client(t)
	for revision(t, ocli) < c.snapRev {
		if _, err := ocli.Put(t.Context(), "/other", "x"); err != nil {
			t.Fatal(err)
		}
	}
	snap, rev := snapshottest.SaveSnapshot(t, ocli, other.Endpoint)
	if rev != c.snapRev {
		t.Fatalf("other data at %d, want %d", rev, c.snapRev)
	}
	p := cutTrailer(t, snap)
	before, err := kvhash.File(p, 0, kvhash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Replay(t.Context(), c.b, testPrefix, c.id, p, Target{}, ReplayOptions{})
	if !errors.Is(err, ErrInconsistent) || res.Revision >= c.end {
		t.Fatalf("replay onto another cluster's data: %+v, %v; want ErrInconsistent", res, err)
	}
	if after, err := kvhash.File(p, 0, kvhash.Options{}); err != nil || after.Hash != before.Hash || after.CurrentRevision != rev {
		t.Fatalf("the refused replay changed the data: %+v, %v", after, err)
	}

	if _, _, err := c.replayCopy(t, Target{Revision: c.snapRev - 1}); !errors.Is(err, ErrNotCaptured) {
		t.Fatalf("replay to a revision before the data's: %v, want ErrNotCaptured", err)
	}
}

// TestReplayGap: a capture missing a segment replays to a target before the gap, and refuses
// a target after it and the newest point.
func TestReplayGap(t *testing.T) {
	c := captureLoad(t)
	segs, err := ListSegments(t.Context(), c.b, testPrefix, c.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments; the test needs 3", len(segs))
	}
	gone := segs[len(segs)/2]
	if err := c.b.Delete(t.Context(), gone.Key); err != nil {
		t.Fatal(err)
	}
	p, res, err := c.replayCopy(t, Target{Revision: gone.First - 1})
	if err != nil || res.Revision != gone.First-1 || !res.Exact {
		t.Fatalf("replay to just before the gap: %+v, %v", res, err)
	}
	c.sameHash(t, p, gone.First-1)
	for _, target := range []Target{{}, {Revision: gone.Last + 1}, {Revision: gone.First}} {
		if _, _, err := c.replayCopy(t, target); !errors.Is(err, ErrNotCaptured) {
			t.Errorf("replay to %s across the gap %d-%d: %v, want ErrNotCaptured", target, gone.First, gone.Last, err)
		}
		if _, err := Resolve(t.Context(), c.b, testPrefix, c.id, c.snapRev, target); !errors.Is(err, ErrNotCaptured) {
			t.Errorf("Resolve to %s across the gap %d-%d: %v, want ErrNotCaptured", target, gone.First, gone.Last, err)
		}
	}
}

// runRestored restores the data file at db with etcdutl, runs etcd on it and returns a client.
func runRestored(t *testing.T, db string) *clientv3.Client {
	t.Helper()
	e := snapshottest.NewEtcd(t, "restored", nil)
	out, err := exec.Command(snapshottest.Bin(t, "etcdutl"), "snapshot", "restore", db, "--skip-hash-check", "--data-dir", e.DataDir,
		"--name", e.Name, "--initial-cluster", snapshottest.InitialCluster(e), "--initial-advertise-peer-urls", e.PeerURL).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	return e.Client(t)
}

// BenchmarkReplay: replaying 100,000 captured revisions (one put of a 256-byte value each,
// over 10,000 keys) onto an empty etcd's data, from an in-memory store.
func BenchmarkReplay(b *testing.B) {
	const revisions, keySpace = 100_000, 10_000
	e := snapshottest.StartEtcd(b, "")
	cli := e.Client(b)
	st, err := cli.Status(b.Context(), e.Endpoint)
	if err != nil {
		b.Fatal(err)
	}
	id := snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: st.Header.ClusterId}
	snap, base := snapshottest.SaveSnapshot(b, cli, e.Endpoint)
	raw, err := os.ReadFile(snap)
	if err != nil {
		b.Fatal(err)
	}
	raw = raw[:len(raw)-32]
	store := memory.New()
	bld, err := NewBuilder(id)
	if err != nil {
		b.Fatal(err)
	}
	versions := map[int]int64{}
	created := map[int]int64{}
	value := bytes.Repeat([]byte("v"), 256)
	flush := func() {
		seg, err := bld.Finish()
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Put(b.Context(), seg.Key(testPrefix), bytes.NewReader(seg.Data)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range revisions {
		rev, k := base+1+int64(i), i%keySpace
		if versions[k] == 0 {
			created[k] = rev
		}
		versions[k]++
		kv := &mvccpb.KeyValue{Key: fmt.Appendf(nil, "/registry/k%05d", k), Value: value, CreateRevision: created[k], ModRevision: rev, Version: versions[k]}
		if err := bld.Append(rev, time.Unix(0, rev), []*mvccpb.Event{{Type: mvccpb.PUT, Kv: kv}}); err != nil {
			b.Fatal(err)
		}
		if bld.Size() >= DefaultSegmentMaxBytes {
			flush()
		}
	}
	flush()
	dir := b.TempDir()
	for b.Loop() {
		p := filepath.Join(dir, "db")
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			b.Fatal(err)
		}
		res, err := Replay(b.Context(), store, testPrefix, id, p, Target{}, ReplayOptions{})
		if err != nil || res.Revisions != revisions {
			b.Fatalf("Replay: %+v, %v", res, err)
		}
	}
}
