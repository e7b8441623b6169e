package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxWrites bounds a Writer even when nobody stops it.
const maxWrites = 100_000

// Writer puts keys <prefix>000000, <prefix>000001, ... through a client until Finish, one every
// 20 ms, and remembers which writes etcd acknowledged.
type Writer struct {
	cli    *clientv3.Client
	prefix string
	stop   chan struct{}
	once   sync.Once // closes stop
	done   chan struct{}
	mu     sync.Mutex
	acked  []string
	at     []time.Time // when each of acked was acknowledged
	rev    []int64     // the revision etcd acknowledged each of acked at
	failed int
}

// Ack is a write etcd acknowledged.
type Ack struct {
	Key      string
	Acked    time.Time
	Revision int64
}

// StartWriter starts writing under prefix through cli.
func StartWriter(cli *clientv3.Client, prefix string) *Writer {
	w := &Writer{cli: cli, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; i < maxWrites; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			k := fmt.Sprintf("%s%06d", prefix, i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := cli.Put(ctx, k, k)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked, w.at, w.rev = append(w.acked, k), append(w.at, time.Now()), append(w.rev, resp.Header.Revision)
			} else {
				w.failed++
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

// halt stops the writer (again: a no-op) and waits for its last write.
func (w *Writer) halt() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// Stop stops the writer and returns the writes etcd acknowledged, in order (for a test whose
// cluster is gone by then). It may be called again, returning the same writes.
func (w *Writer) Stop() []Ack {
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Ack, len(w.acked))
	for i, k := range w.acked {
		out[i] = Ack{Key: k, Acked: w.at[i], Revision: w.rev[i]}
	}
	return out
}

// Finish stops the writer and fails the test unless every acknowledged write is readable (and
// there was at least one).
func (w *Writer) Finish(t testing.TB) {
	t.Helper()
	have := w.readBack(t)
	lost := 0
	for _, k := range w.acked {
		if !have[k] {
			lost++
		}
	}
	t.Logf("continuous writer: %d writes acknowledged, %d failed (retried as new keys), %d acknowledged writes lost", len(w.acked), w.failed, lost)
	if lost > 0 || len(w.acked) == 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(w.acked))
	}
}

// readBack stops the writer and reads which of its keys the cluster has.
func (w *Writer) readBack(t testing.TB) map[string]bool {
	t.Helper()
	w.halt()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := w.cli.Get(ctx, w.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("reading the writer's keys: %v", err)
	}
	have := map[string]bool{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = true
	}
	return have
}

// FinishAfterLoss stops the writer of a cluster that was brought back from a member holding
// revision kept, recovered from since: every write acknowledged at a revision up to kept, and
// every write acknowledged after since, must be readable; the others (acknowledged by members
// whose data is gone, after the survivor's last entry) may be lost, and are counted. It
// returns how many were.
func (w *Writer) FinishAfterLoss(t testing.TB, kept int64, since time.Time) int {
	t.Helper()
	have := w.readBack(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	lost, mustHave, missing := 0, 0, 0
	for i, k := range w.acked {
		must := w.rev[i] <= kept || w.at[i].After(since)
		if must {
			mustHave++
		}
		switch {
		case have[k]:
		case must:
			missing++
			t.Errorf("acknowledged write %s (revision %d, at %s) lost: the survivor kept revision %d", k, w.rev[i], w.at[i].Format(time.RFC3339Nano), kept)
		default:
			lost++
		}
	}
	t.Logf("continuous writer: %d writes acknowledged (%d at or below the kept revision %d, or after the recovery), %d failed; %d of them lost, %d acknowledged past the survivor's data lost",
		len(w.acked), mustHave, kept, w.failed, missing, lost)
	if mustHave == 0 {
		t.Fatal("no acknowledged write to check")
	}
	return lost
}
