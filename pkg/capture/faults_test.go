package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
)

// TestCaptureCompacted: a start revision etcd has compacted ends Run with ErrCompacted (and
// etcd's own error), naming the revision.
func TestCaptureCompacted(t *testing.T) {
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	if err := workload(t.Context(), cli, 0, 50); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	compacted := revision(t, cli)
	if _, err := cli.Compact(ctx, compacted); err != nil {
		t.Fatal(err)
	}
	b := memory.New()
	r := run(t, testConfig(t, cli, b, id, start))
	err := r.result(t, 10*time.Second)
	if !errors.Is(err, ErrCompacted) || !errors.Is(err, rpctypes.ErrCompacted) || !strings.Contains(err.Error(), fmt.Sprintf("from revision %d", start)) {
		t.Fatalf("Run = %v; want ErrCompacted from revision %d", err, start)
	}
	if ce, ok := errors.AsType[*CompactedError](err); !ok || ce.Next != start || ce.CompactRevision != compacted {
		t.Fatalf("Run = %#v; want a *CompactedError with Next %d and CompactRevision %d", err, start, compacted)
	}
	if objs, _ := b.List(ctx, ""); len(objs) != 0 {
		t.Fatalf("stored %d objects", len(objs))
	}
}

// outageStore fails Stat and Put while down, and records the keys it stored, in order.
type outageStore struct {
	backend.Backend
	down     atomic.Bool
	failures atomic.Int64
	mu       sync.Mutex
	stored   []string
}

var errOutage = errors.New("store unavailable (test)")

func (s *outageStore) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if s.down.Load() {
		s.failures.Add(1)
		return backend.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, errOutage)
	}
	return s.Backend.Stat(ctx, key)
}

func (s *outageStore) Put(ctx context.Context, key string, r io.Reader) error {
	if s.down.Load() {
		s.failures.Add(1)
		return fmt.Errorf("put %s: %w", key, errOutage)
	}
	if err := s.Backend.Put(ctx, key, r); err != nil {
		return err
	}
	s.mu.Lock()
	s.stored = append(s.stored, key)
	s.mu.Unlock()
	return nil
}

func (s *outageStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stored)
}

// TestCaptureStoreOutage: while the store fails, the watch goes on and closed segments queue;
// when it recovers they are stored in revision order, and the capture is complete.
func TestCaptureStoreOutage(t *testing.T) {
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	store := &outageStore{Backend: memory.New()}
	store.down.Store(true)
	r := run(t, testConfig(t, cli, store, id, start))
	wait := startLoad(cli, 2, 500)
	waitFor(t, 15*time.Second, "four segments queued", func() (bool, string) {
		p := r.c.Progress()
		return p.PendingSegments >= 4, fmt.Sprintf("progress %+v", p)
	})
	queued := r.c.Progress()
	if queued.Segments != 0 || queued.UploadedRevision != start-1 || queued.Lag <= 0 || store.failures.Load() == 0 {
		t.Fatalf("during the outage: progress %+v, %d failed calls", queued, store.failures.Load())
	}
	store.down.Store(false)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	last := revision(t, cli)
	r.waitUploaded(t, last, 10*time.Second)
	keys := store.keys()
	if !slices.IsSorted(keys) || len(keys) < queued.PendingSegments {
		t.Fatalf("stored %d keys, not in revision order:\n%s", len(keys), strings.Join(keys, "\n"))
	}
	checkOK(t, store, id, start, last)
	compareWithEtcd(t, cli, store, id, start, last)
	t.Logf("%d segments (%d bytes) queued during the outage after %d failed calls; %d segments stored in order after it",
		queued.PendingSegments, queued.PendingBytes, store.failures.Load(), len(keys))
}

// TestCaptureBufferFull: when the store stays down, Run ends with ErrBufferFull once the queue
// would pass MaxBufferedBytes, having stored nothing.
func TestCaptureBufferFull(t *testing.T) {
	cli, id := startEtcd(t)
	store := &outageStore{Backend: memory.New()}
	store.down.Store(true)
	cfg := testConfig(t, cli, store, id, revision(t, cli)+1)
	cfg.MaxBufferedBytes = 16 << 10
	cfg.SegmentMaxBytes = 4 << 10
	r := run(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = workload(ctx, cli, 0, 2000) }() // ends with the test
	err := r.result(t, 15*time.Second)
	if !errors.Is(err, ErrBufferFull) {
		t.Fatalf("Run = %v; want ErrBufferFull", err)
	}
	if p := r.c.Progress(); len(store.keys()) != 0 || p.PendingBytes > cfg.MaxBufferedBytes {
		t.Fatalf("stored %v; progress %+v", store.keys(), p)
	}
	t.Logf("Run: %v", err)
}

// cuttingWatcher ends each of the first cuts watches after it has passed on after responses
// with events: alternately with a cancellation and by closing the channel, as a lost member
// or leader does.
type cuttingWatcher struct {
	clientv3.Watcher
	after, cuts int
	watches     atomic.Int64
}

func (w *cuttingWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	n := w.watches.Add(1)
	if n > int64(w.cuts) {
		return w.Watcher.Watch(ctx, key, opts...)
	}
	ctx, cancel := context.WithCancel(ctx)
	in := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		defer cancel()
		passed := 0
		for resp := range in {
			select {
			case out <- resp:
			case <-ctx.Done():
				return
			}
			if passed += min(len(resp.Events), 1); passed < w.after {
				continue
			}
			if n%2 == 1 {
				select {
				case out <- clientv3.WatchResponse{Canceled: true}:
				case <-ctx.Done():
				}
			}
			return
		}
	}()
	return out
}

// TestCaptureWatchRestart: watches that end (a member or its leader lost) are restarted from
// the revision after the last one appended: no gap, no duplicate.
func TestCaptureWatchRestart(t *testing.T) {
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	w := &cuttingWatcher{Watcher: cli, after: 5, cuts: 6}
	b := memory.New()
	r := run(t, testConfig(t, w, b, id, start))
	// Load in rounds until every cut has happened (responses batch several revisions when the
	// watch is behind, so the number of responses a load makes varies).
	for round := 0; w.watches.Load() <= int64(w.cuts); round++ {
		if round == 10 {
			t.Fatalf("%d watches after %d rounds of load: the cuts did not happen", w.watches.Load(), round)
		}
		if err := startLoad(cli, 2, 100)(); err != nil {
			t.Fatal(err)
		}
		r.waitUploaded(t, revision(t, cli), 10*time.Second)
	}
	last := revision(t, cli)
	r.waitUploaded(t, last, 10*time.Second)
	checkOK(t, b, id, start, last)
	compareWithEtcd(t, cli, b, id, start, last)
}

// TestCaptureClusterChanged: a watch answered by another etcd cluster (the members behind the
// endpoints were replaced, as by a restore) ends Run with ErrClusterChanged, and none of that
// cluster's revisions is stored under the captured cluster's identity.
func TestCaptureClusterChanged(t *testing.T) {
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	captured := id
	captured.ClusterID++ // the capture believes it watches another cluster
	b := memory.New()
	r := run(t, testConfig(t, cli, b, captured, start))
	if err := workload(t.Context(), cli, 0, 5); err != nil {
		t.Fatal(err)
	}
	err := r.result(t, 10*time.Second)
	if !errors.Is(err, ErrClusterChanged) {
		t.Fatalf("Run = %v; want ErrClusterChanged", err)
	}
	if objs, _ := b.List(t.Context(), ""); len(objs) != 0 {
		t.Fatalf("stored %d objects", len(objs))
	}
}

// TestCaptureFlushesAtStop: a capture stopped (its context ended, as when the schedule is
// suspended or the operator shuts down) closes its open segment and stores it before Run
// returns, so what it received survives a disaster that comes with the stop; with a negative
// FlushTimeout it drops it, as before.
func TestCaptureFlushesAtStop(t *testing.T) {
	for _, flush := range []bool{true, false} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			cli, id := startEtcd(t)
			start := revision(t, cli) + 1
			b := memory.New()
			cfg := testConfig(t, cli, b, id, start)
			cfg.SegmentInterval = time.Hour // nothing closes a segment but the stop
			if !flush {
				cfg.FlushTimeout = -1
			}
			r := run(t, cfg)
			if err := workload(t.Context(), cli, 0, 30); err != nil {
				t.Fatal(err)
			}
			top := revision(t, cli)
			waitFor(t, 10*time.Second, "every revision received", func() (bool, string) {
				p := r.c.Progress()
				return p.AppendedRevision >= top, fmt.Sprintf("progress %+v", p)
			})
			if err := r.stop(t); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v; want context.Canceled", err)
			}
			last, err := LastCaptured(t.Context(), b, testPrefix, id)
			if err != nil {
				t.Fatal(err)
			}
			if !flush {
				if last.LastRevision != 0 {
					t.Fatalf("without a flush, revision %d was stored", last.LastRevision)
				}
				return
			}
			if last.LastRevision != top {
				t.Fatalf("stored up to %d at stop; want %d, every revision received", last.LastRevision, top)
			}
			checkOK(t, b, id, start, top)
		})
	}
}
