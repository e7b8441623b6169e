//go:build bench

package capture

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// callTimeout bounds one etcd call of the load.
const callTimeout = 10 * time.Second

// op is request i (0 to n-1, over all writers) of a load, sent by writer w with cli.
type op func(ctx context.Context, cli *clientv3.Client, w, i int) error

// runLoad sends n requests from len(clients) writers, writer w sending requests w, w+len, ...
// over its own client. With a positive pace the writers together send one request every pace
// (request i is due at start + i x pace; a writer that falls behind sends at once); with pace
// 0 each writer sends its next request when the last one returned. The load is bounded by n
// and by timeout. It returns every request's latency, from the moment it was sent, sorted,
// and the wall time.
func runLoad(ctx context.Context, clients []*clientv3.Client, n int, pace, timeout time.Duration, do op) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lat := make([]time.Duration, n)
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	for w, cli := range clients {
		wg.Go(func() {
			for i := w; i < n; i += len(clients) {
				if pace > 0 {
					if err := waitUntil(ctx, start.Add(time.Duration(i)*pace)); err != nil {
						errs <- fmt.Errorf("load stopped after %s at request %d: %w", time.Since(start).Round(time.Millisecond), i, err)
						return
					}
				}
				sent := time.Now()
				if err := do(ctx, cli, w, i); err != nil {
					errs <- fmt.Errorf("writer %d, request %d: %w", w, i, err)
					return
				}
				lat[i] = time.Since(sent)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		return nil, took, err
	}
	slices.Sort(lat)
	return lat, took, nil
}

// waitUntil waits for the clock to reach at, or ctx to end.
func waitUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// putOp overwrites keys keys in turn with value (request i the key i modulo keys).
func putOp(value string, keys int) op {
	return func(ctx context.Context, cli *clientv3.Client, _, i int) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := cli.Put(ctx, fmt.Sprintf("/load/k%06d", i%keys), value)
		return err
	}
}

// percentile is the nearest-rank p-th quantile (0 < p <= 1) of sorted xs; 0 for none.
func percentile[T ~int64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// revision is the member's current store revision.
func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// mark writes a key and returns its revision: the first one a capture started at it receives.
func mark(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	resp, err := cli.Put(ctx, "/bench/mark", time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
