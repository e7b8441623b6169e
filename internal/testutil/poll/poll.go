// Package poll is the one loop every test waits with: testutil.Eventually and
// testutil.Consistently for unit and envtest tests, snapshottest for a starting etcd, and
// test/e2e/framework for the local cluster. It imports only the standard library, so that the
// packages testutil itself depends on (pkg/snapshot, pkg/backend) can use it in their tests.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Until calls cond every interval until it returns true, and returns nil then; if timeout or
// ctx ends first, it returns an error carrying the last reason cond gave. cond returns
// (false, err) for "not yet, because err"; its ctx ends with the poll.
func Until(ctx context.Context, interval, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		// Both may be ready at once and select picks either: never call cond once ctx ended.
		if ctx.Err() != nil {
			if last == nil {
				last = errors.New("condition not met")
			}
			return fmt.Errorf("timed out after %s: %w", timeout, last)
		}
	}
}
