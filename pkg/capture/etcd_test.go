package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// callTimeout bounds every etcd call of the tests.
const callTimeout = 10 * time.Second

// testPrefix is the backup prefix of the capture tests.
const testPrefix = "backups/etcd.backup"

// startEtcd starts a one-member etcd and returns its client and the cluster's identity.
func startEtcd(t *testing.T) (*clientv3.Client, snapshot.Identity) {
	t.Helper()
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	st, err := cli.Status(ctx, e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return cli, snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: st.Header.ClusterId}
}

// revision is etcd's current store revision.
func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// workload makes ops requests as writer w: puts and overwrites of values up to 1 KiB, deletes
// (some of missing keys, which make no revision), range deletes, transactions of three
// operations, and every 100 requests a lease with two keys that is then revoked (one revision
// deleting both). A request that fails is tried up to three times (a killed leader fails the
// requests in flight).
func workload(ctx context.Context, cli *clientv3.Client, w, ops int) error {
	for i := range ops {
		var err error
		for range 3 {
			if err = request(ctx, cli, w, i); err == nil || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("writer %d, request %d: %w", w, i, err)
		}
	}
	return nil
}

// request makes request i of writer w's workload.
func request(ctx context.Context, cli *clientv3.Client, w, i int) error {
	key := func(j int) string { return fmt.Sprintf("/load/w%d/k%04d", w, j%200) }
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var err error
	switch i % 10 {
	case 5:
		_, err = cli.Delete(ctx, key(i*7))
	case 6:
		_, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key(i)), ">", 0)).
			Then(clientv3.OpPut(key(i+1), "t1"), clientv3.OpPut(key(i+2), "t2"), clientv3.OpDelete(key(i+3))).
			Else(clientv3.OpPut(key(i), "else")).Commit()
	case 7:
		_, err = cli.Delete(ctx, fmt.Sprintf("/load/w%d/k01", w), clientv3.WithPrefix())
	case 9:
		if i%100 == 9 {
			return leaseRound(ctx, cli, key(i), key(i+1))
		}
		fallthrough
	default:
		_, err = cli.Put(ctx, key(i), strings.Repeat(string(rune('a'+i%26)), 1+(i*37)%1024))
	}
	return err
}

// leaseRound grants a lease, attaches two keys and revokes it.
func leaseRound(ctx context.Context, cli *clientv3.Client, k1, k2 string) error {
	l, err := cli.Grant(ctx, 60)
	if err != nil {
		return err
	}
	for _, k := range []string{k1, k2} {
		if _, err := cli.Put(ctx, k+"-leased", "v", clientv3.WithLease(l.ID)); err != nil {
			return err
		}
	}
	_, err = cli.Revoke(ctx, l.ID)
	return err
}

// startLoad runs writers workloads of ops requests each; wait returns their first error.
func startLoad(cli *clientv3.Client, writers, ops int) (wait func() error) {
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() { errs[w] = workload(context.Background(), cli, w, ops) })
	}
	return func() error { wg.Wait(); return errors.Join(errs...) }
}

// running is a Capturer's Run in a goroutine.
type running struct {
	c      *Capturer
	cancel context.CancelFunc
	done   chan error
}

// run starts cfg's Capturer; the test's cleanup stops it.
func run(t *testing.T, cfg Config) *running {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.done; !errors.Is(err, context.Canceled) {
			t.Logf("Run: %v", err)
		}
	})
	return r
}

// stop cancels the capture and returns Run's error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's end")
		return nil
	}
}

// result waits up to d for Run to return by itself.
func (r *running) result(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("Run still running after %s; progress %+v", d, r.c.Progress())
		return nil
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := poll.Until(context.Background(), 20*time.Millisecond, timeout, func(context.Context) (bool, error) {
		ok, state := cond()
		return ok, errors.New(state)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitUploaded waits until r has uploaded revision rev.
func (r *running) waitUploaded(t *testing.T, rev int64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("revision %d uploaded", rev), func() (bool, string) {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("Run returned %v before uploading revision %d", err, rev)
		default:
		}
		p := r.c.Progress()
		return p.UploadedRevision >= rev, fmt.Sprintf("progress %+v", p)
	})
}

// checkOK runs Check over [from, to] and fails the test unless it finds every revision once.
func checkOK(t *testing.T, b backend.Backend, id snapshot.Identity, from, to int64) Report {
	t.Helper()
	rep, err := Check(context.Background(), b, testPrefix, id, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.First != from || rep.Last != to || rep.Revisions != to-from+1 {
		t.Fatalf("Check(%d, %d) = %+v", from, to, rep)
	}
	return rep
}

// compareWithEtcd reads the captured revisions from to to, in order, and compares them with a
// fresh watch of etcd from the same revision, event by event (protobuf bytes, previous values
// included); then applies them to the keyspace at from-1 and compares the result with the
// keyspace at to. It returns the number of events.
func compareWithEtcd(t *testing.T, cli *clientv3.Client, b backend.Backend, id snapshot.Identity, from, to int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	keyspace := getAll(ctx, t, cli, from-1)
	wch := cli.Watch(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV())
	var pending []*clientv3.Event
	var events int64
	segs, err := ListSegments(ctx, b, testPrefix, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range segs {
		_, err := ReadSegment(ctx, b, o, func(rec Record) error {
			if rec.Revision < from || rec.Revision > to {
				return nil
			}
			for i, ev := range rec.Events {
				for len(pending) == 0 {
					resp, ok := <-wch
					if !ok || resp.Err() != nil {
						return fmt.Errorf("fresh watch ended at revision %d: %w", rec.Revision, resp.Err())
					}
					pending = resp.Events
				}
				want := (*mvccpb.Event)(pending[0])
				pending = pending[1:]
				if !bytes.Equal(mustMarshal(t, ev), mustMarshal(t, want)) {
					return fmt.Errorf("revision %d event %d: captured %v, etcd says %v", rec.Revision, i, ev, want)
				}
				apply(keyspace, ev)
				events++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	live := getAll(ctx, t, cli, to)
	if len(live) != len(keyspace) {
		t.Fatalf("replayed keyspace has %d keys, etcd at %d has %d", len(keyspace), to, len(live))
	}
	for k, kv := range live {
		if !bytes.Equal(mustMarshal(t, kv), mustMarshal(t, keyspace[k])) {
			t.Fatalf("key %q: replayed %v, etcd at %d has %v", k, keyspace[k], to, kv)
		}
	}
	return events
}

type marshaler interface{ Marshal() ([]byte, error) }

func mustMarshal(t *testing.T, m marshaler) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func apply(keyspace map[string]*mvccpb.KeyValue, ev *mvccpb.Event) {
	if ev.Type == mvccpb.DELETE {
		delete(keyspace, string(ev.Kv.Key))
		return
	}
	keyspace[string(ev.Kv.Key)] = ev.Kv
}

func getAll(ctx context.Context, t *testing.T, cli *clientv3.Client, rev int64) map[string]*mvccpb.KeyValue {
	t.Helper()
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*mvccpb.KeyValue, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv
	}
	return out
}
