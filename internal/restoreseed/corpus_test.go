package restoreseed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/testutil/keyspace"
	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRestoreCorpus: every keyspace real clients leave (leases, locks and elections, auth,
// compacted history with large values and transactions), in etcd 3.6 and 3.5, is backed up
// through the backup pipeline, restored by the agent with that release's etcdutl, and served by
// an etcd of that release on the restored data exactly as the source served it at the backup's
// revision, key by key, leases included; the agent's hash and key count are what that etcd
// serves. Before internal/kvhash the first three failed: "etcdutl hashkv of the restored data:
// ... panic: no lessor to attach lease".
func TestRestoreCorpus(t *testing.T) {
	keyspace.Run(t, restoreAndCompare)
}

// restoreAndCompare backs src up, restores it with the agent and compares.
func restoreAndCompare(t *testing.T, binDir string, src *keyspace.Source) {
	t.Helper()
	bucket := t.TempDir()
	b, err := factory.New(t.Context(), factory.Config{Type: factory.Local, Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := snapshot.Take(t.Context(), &snapshot.Config{
		Endpoints: []string{src.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 30 * time.Second,
		Access: etcdaccess.Access{Username: src.Username, Password: src.Password},
		Key:    func(int64, time.Time) string { return "db/snap" },
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	newOptions := func(password string) *Options {
		o := options(t, bucket, "db/snap", Expect{Size: bk.Size, SHA256: bk.SHA256})
		o.Etcdutl = snapshottest.BinIn(t, binDir, "etcdutl")
		if password != "" {
			o.AuthDir = authSecret(t, src.Username, password)
		}
		return o
	}
	if src.Password != "" {
		// The credentials the cluster is given must open the backup's auth store: other ones
		// fail the restore at once, before any etcd starts on the data.
		for what, pw := range map[string]string{"another password": src.Password + "-not", "no spec.auth": ""} {
			if res := Restore(t.Context(), newOptions(pw)); res.Outcome != OutcomeFailed || res.Reason != etcdv1beta2.ReasonAuthFailed {
				t.Fatalf("restore with %s: %+v, want AuthFailed", what, res)
			} else {
				t.Logf("restore with %s: %s", what, res.Message)
			}
		}
	}
	// As the restore operator does by default (revisionBump), and with the backup's revisions.
	for _, bump := range []int64{etcdv1beta2.DefaultRevisionBump, 0} {
		o := newOptions(src.Password)
		o.BumpRevision = bump
		restoreAndServe(t, binDir, src, o, bk.Member.Revision)
	}
}

// restoreAndServe restores with o, starts etcd on the data and checks that it serves the
// source's keyspace at the backup's revision rev (or, with a raised revision, at the raised
// one, with every key's revisions as they were), and the hash and key count the agent computed.
func restoreAndServe(t *testing.T, binDir string, src *keyspace.Source, o *Options, rev int64) {
	t.Helper()
	res := Restore(t.Context(), o)
	if res.Outcome != OutcomeRestored {
		t.Fatalf("restore (bump %d): %+v", o.BumpRevision, res)
	}
	at := rev
	if o.BumpRevision > 0 {
		if res.BackupRevision != rev || res.Revision < rev+o.BumpRevision || res.CompactRevision != res.Revision {
			t.Fatalf("restore raised by %d: revision %d, backup revision %d, compacted at %d; the backup's %d", o.BumpRevision, res.Revision, res.BackupRevision, res.CompactRevision, rev)
		}
		at = res.Revision
	} else if res.Revision != rev {
		t.Fatalf("restored revision %d, the backup's %d", res.Revision, rev)
	}

	// The data dir holds its member and WAL: etcd takes them from there, not from the flags.
	restored := snapshottest.NewEtcd(t, "default", nil)
	restored.Dir, restored.DataDir = binDir, o.DataDir
	restored.Start(t, snapshottest.InitialCluster(restored), "new")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{restored.Endpoint}, DialTimeout: 5 * time.Second,
		Username: src.Username, Password: src.Password, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	waitServing(t, cli, restored.Endpoint)

	n := keyspace.Capture(t, src.Client, rev).CheckAt(t, cli, at)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h, err := cli.HashKV(ctx, restored.Endpoint, at)
	if err != nil {
		t.Fatal(err)
	}
	if h.Hash != res.HashKV || int64(n) != res.Keys {
		t.Fatalf("the restored member serves hash %d and %d keys at %d; the agent computed %d and %d", h.Hash, n, at, res.HashKV, res.Keys)
	}
	if o.BumpRevision > 0 {
		// A watcher that saw a revision newer than the backup is told it is compacted.
		if _, err := cli.Get(ctx, "x", clientv3.WithRev(rev+1)); err == nil || !strings.Contains(err.Error(), "compacted") {
			t.Fatalf("a read at revision %d, after the backup's: %v, want compacted", rev+1, err)
		}
	}
}

func waitServing(t *testing.T, cli *clientv3.Client, endpoint string) {
	t.Helper()
	err := poll.Until(t.Context(), 100*time.Millisecond, snapshottest.ReadyTimeout, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := cli.Status(ctx, endpoint)
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("restored etcd does not serve: %v", err)
	}
}

// authSecret lays out the cluster's auth Secret (keys username and password) as mounted.
func authSecret(t *testing.T, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{"username": user, "password": password} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
