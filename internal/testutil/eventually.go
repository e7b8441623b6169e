package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond every 100 ms until it reports true, and fails the test with what and
// cond's last state after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
