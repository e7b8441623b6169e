package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// quiet is how long a test watches for something that must not happen after the step that
// would have caused it.
const quiet = 300 * time.Millisecond

// never fails the test if cond holds at any poll during quiet.
func never(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := poll.Until(context.Background(), 20*time.Millisecond, quiet, func(context.Context) (bool, error) { return cond(), nil })
	if err == nil {
		t.Fatalf("%s", what)
	}
}

func put(t *testing.T, cli *clientv3.Client, key, val string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := cli.Put(ctx, key, val)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func (r *running) waitAppended(t *testing.T, rev int64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("revision %d appended", rev), func() (bool, string) {
		p := r.c.Progress()
		return p.AppendedRevision >= rev, fmt.Sprintf("progress %+v", p)
	})
}

// TestSegmentInterval: a segment closes SegmentInterval after its first revision arrived, not
// after the last, and an idle cluster uploads nothing. Lag counts from the first revision
// not uploaded.
func TestSegmentInterval(t *testing.T) {
	cli, id := startEtcd(t)
	clk := testingclock.NewFakeClock(t0)
	b := memory.New()
	cfg := testConfig(t, cli, b, id, revision(t, cli)+1)
	cfg.Clock, cfg.SegmentInterval = clk, DefaultSegmentInterval
	r := run(t, cfg)
	stored := func() bool { objs, _ := b.List(context.Background(), ""); return len(objs) > 0 }

	clk.Step(time.Hour)
	never(t, "an idle capture uploaded a segment", stored)
	first := put(t, cli, "k1", "v1")
	r.waitAppended(t, first)
	firstAt := clk.Now()
	clk.Step(DefaultSegmentInterval - time.Second)
	second := put(t, cli, "k2", "v2")
	r.waitAppended(t, second)
	if p := r.c.Progress(); p.Lag != DefaultSegmentInterval-time.Second || p.Segments != 0 {
		t.Fatalf("progress %+v: want a lag of %s from the first revision, nothing uploaded", p, DefaultSegmentInterval-time.Second)
	}
	never(t, "the segment closed before its interval", stored)

	clk.Step(time.Second)
	r.waitUploaded(t, second, 10*time.Second)
	key := SegmentKey(testPrefix, id, first, second, firstAt)
	if _, err := b.Stat(context.Background(), key); err != nil {
		t.Fatalf("segment not at %s: %v", key, err)
	}
	if p := r.c.Progress(); p.Lag != 0 || p.Segments != 1 || p.UploadedKey != key || !p.UploadedTime.Equal(firstAt.Add(DefaultSegmentInterval-time.Second)) {
		t.Fatalf("progress after the upload %+v", p)
	}
	clk.Step(time.Hour)
	never(t, "an idle capture uploaded a second segment", func() bool { return r.c.Progress().Segments > 1 })
}

// countingStore counts Puts.
type countingStore struct {
	backend.Backend
	puts atomic.Int64
}

func (s *countingStore) Put(ctx context.Context, key string, r io.Reader) error {
	s.puts.Add(1)
	return s.Backend.Put(ctx, key, r)
}

// TestNeverOverwrite: an object already under a segment's key is accepted only when it is the
// same bytes (a retried upload), and never replaced: other bytes, of the same size or not, end
// Run with ErrConflict.
func TestNeverOverwrite(t *testing.T) {
	cli, id := startEtcd(t)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"identical", func(b []byte) []byte { return b }, nil},
		{"same size", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, ErrConflict},
		{"other size", func(b []byte) []byte { return b[:len(b)-1] }, ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			store := &countingStore{Backend: memory.New()}
			start := revision(t, cli) + 1
			key, val := "/overwrite/"+tc.name, "v"
			// The segment the capturer will write for the put below, edited.
			want := expectedSegment(t, id, start, &mvccpb.KeyValue{Key: []byte(key), Value: []byte(val), CreateRevision: start, ModRevision: start, Version: 1})
			existing := tc.edit(bytes.Clone(want.Data))
			if err := store.Backend.Put(context.Background(), want.Key(testPrefix), bytes.NewReader(existing)); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t, cli, store, id, start)
			cfg.Clock = clk
			r := run(t, cfg)
			if rev := put(t, cli, key, val); rev != start {
				t.Fatalf("put at revision %d, want %d", rev, start)
			}
			r.waitAppended(t, start)
			clk.Step(cfg.SegmentInterval)
			if tc.want == nil {
				r.waitUploaded(t, start, 10*time.Second)
			} else if err := r.result(t, 10*time.Second); !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v; want %v", err, tc.want)
			}
			rc, err := store.Get(context.Background(), want.Key(testPrefix))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			_ = rc.Close()
			if !bytes.Equal(got, existing) || store.puts.Load() != 0 {
				t.Fatalf("the existing object changed, or %d Puts", store.puts.Load())
			}
		})
	}
}

// expectedSegment is the one-revision segment of a put of kv (a new key, so no previous value)
// received at t0.
func expectedSegment(t *testing.T, id snapshot.Identity, rev int64, kv *mvccpb.KeyValue) Segment {
	t.Helper()
	b, err := NewBuilder(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(rev, t0, []*mvccpb.Event{{Type: mvccpb.PUT, Kv: kv}}); err != nil {
		t.Fatal(err)
	}
	seg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return seg
}

// TestNewRejectsInvalidConfig: New names every problem of a config.
func TestNewRejectsInvalidConfig(t *testing.T) {
	_, err := New(Config{Identity: snapshot.Identity{Namespace: "NS", Cluster: "a_b"}, StartRevision: 1, RetryInitial: time.Second, RetryMax: time.Millisecond})
	for _, want := range []string{"no etcd client", "no backend", "empty prefix", "identity", "start revision 1", "RetryMax"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("New = %v; want it to say %q", err, want)
		}
	}
	c, err := New(Config{Client: struct{ clientv3.Watcher }{}, Backend: memory.New(), Prefix: "p", Identity: testID, StartRevision: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.SegmentInterval != DefaultSegmentInterval || c.cfg.SegmentMaxBytes != DefaultSegmentMaxBytes || c.cfg.MaxBufferedBytes != DefaultMaxBufferedBytes {
		t.Fatalf("defaults not applied: %+v", c.cfg)
	}
	if p := c.Progress(); p.UploadedRevision != 1 || p.AppendedRevision != 1 || p.Lag != 0 {
		t.Fatalf("initial progress %+v", p)
	}
}
