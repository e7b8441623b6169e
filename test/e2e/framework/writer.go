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
	failed int
}

// Ack is a write etcd acknowledged.
type Ack struct {
	Key   string
	Acked time.Time
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
			_, err := cli.Put(ctx, k, k)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked, w.at = append(w.acked, k), append(w.at, time.Now())
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
		out[i] = Ack{Key: k, Acked: w.at[i]}
	}
	return out
}

// Finish stops the writer and fails the test unless every acknowledged write is readable (and
// there was at least one).
func (w *Writer) Finish(t testing.TB) {
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
