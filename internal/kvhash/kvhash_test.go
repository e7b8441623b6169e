package kvhash_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/internal/testutil/keyspace"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// saveSnapshot streams a snapshot of src into a file, as a backup does.
func saveSnapshot(t *testing.T, src *keyspace.Source) (string, int64) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{src.Endpoint}, DialTimeout: 5 * time.Second, Username: src.Username, Password: src.Password, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	return snapshottest.SaveSnapshot(t, cli, src.Endpoint)
}

// restore runs the release's own `etcdutl snapshot restore` and returns the restored db.
func restore(t *testing.T, binDir, snap string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	out, err := exec.Command(snapshottest.BinIn(t, binDir, "etcdutl"), "snapshot", "restore", snap, "--data-dir", dir,
		"--name", "r", "--initial-cluster", "r=http://127.0.0.1:1", "--initial-advertise-peer-urls", "http://127.0.0.1:1").CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	return filepath.Join(dir, "member", "snap", "db")
}

// TestHashMatchesWhatEtcdServes: for every keyspace of the corpus, written by real clients to
// etcd 3.6 and 3.5, the hash and key count computed from the backup restored by that release's
// etcdutl equal the source's HashKV and key count at the backup's revision, and at the
// compaction revision where there is one. etcdutl hashkv panics on the first three entries
// ("no lessor to attach lease"); etcdutl 3.5 has no hashkv.
func TestHashMatchesWhatEtcdServes(t *testing.T) {
	keyspace.Run(t, func(t *testing.T, binDir string, src *keyspace.Source) {
		snap, rev := saveSnapshot(t, src)
		db := restore(t, binDir, snap)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()

		got, err := kvhash.File(db, rev, kvhash.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := src.Client.HashKV(ctx, src.Endpoint, rev)
		if err != nil {
			t.Fatal(err)
		}
		n, err := src.Client.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != want.Hash || got.CompactRevision != want.CompactRevision || got.Keys != n.Count || got.Revision != rev {
			t.Fatalf("computed hash %d compact %d keys %d at %d; etcd serves hash %d compact %d keys %d", got.Hash, got.CompactRevision, got.Keys, got.Revision, want.Hash, want.CompactRevision, n.Count)
		}
		// The snapshot file itself hashes the same: a backup can be checked as it is.
		if raw, err := kvhash.File(snap, rev, kvhash.Options{}); err != nil || raw.Hash != got.Hash {
			t.Fatalf("hash of the snapshot file: %+v, %v; of the restored data %d", raw, err, got.Hash)
		}
		if cur, err := kvhash.File(db, 0, kvhash.Options{}); err != nil || cur.Revision != rev || cur.Hash != got.Hash {
			t.Fatalf("at revision 0: %+v, %v; want revision %d hash %d", cur, err, rev, got.Hash)
		}
		// Between the compaction and the backup. (At the compaction revision itself a
		// running etcd serves the hash it computed while compacting, of the revisions
		// that compaction covered; a restarted one, as a restored member is, computes it
		// anew as here.)
		if c := want.CompactRevision; c > 0 {
			at, err := kvhash.File(db, c+1, kvhash.Options{})
			if err != nil {
				t.Fatal(err)
			}
			served, err := src.Client.HashKV(ctx, src.Endpoint, c+1)
			if err != nil {
				t.Fatal(err)
			}
			if at.Hash != served.Hash {
				t.Fatalf("after the compaction revision %d: computed %d, etcd serves %d", c, at.Hash, served.Hash)
			}
			if _, err := kvhash.File(db, c-1, kvhash.Options{}); !errors.Is(err, kvhash.ErrCompacted) {
				t.Fatalf("below the compaction revision: %v, want ErrCompacted", err)
			}
		}
		if _, err := kvhash.File(db, rev+1, kvhash.Options{}); !errors.Is(err, kvhash.ErrFutureRev) {
			t.Fatalf("past the current revision: %v, want ErrFutureRev", err)
		}
	})
}

// TestNotAnEtcdFile: a file that is not an etcd data file is an error, not a hash.
func TestNotAnEtcdFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(p, []byte("not a bbolt file at all, just bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := kvhash.File(p, 0, kvhash.Options{}); err == nil {
		t.Fatal("hashed a file that is not a database")
	}
}

// FuzzUserKey: the key decoder agrees with etcd's generated decoder on every input it accepts.
func FuzzUserKey(f *testing.F) {
	for _, kv := range []*mvccpb.KeyValue{{Key: []byte("k"), Value: []byte("v"), CreateRevision: 2, ModRevision: 3, Version: 1, Lease: 7}, {Key: []byte("/registry/x")}} {
		b, err := kv.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := kvhash.UserKey(b)
		var kv mvccpb.KeyValue
		if uerr := kv.Unmarshal(b); uerr == nil && len(kv.Key) > 0 && err == nil && string(got) != string(kv.Key) {
			t.Fatalf("key %q, etcd's decoder reads %q", got, kv.Key)
		}
	})
}
