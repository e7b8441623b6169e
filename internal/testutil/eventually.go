package testutil

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
)

// PollInterval is how often Eventually and Consistently check their condition.
const PollInterval = 100 * time.Millisecond

// Timeout is the usual bound for Eventually in envtest and real-etcd tests: long enough for a
// loaded CI machine to run a few reconcile passes or start an etcd member.
const Timeout = 30 * time.Second

// Eventually calls cond every PollInterval until it reports true, and fails the test with what
// and cond's last state if that does not happen within timeout (usually Timeout).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := poll.Until(context.Background(), PollInterval, timeout, func(context.Context) (bool, error) {
		ok, state := cond()
		return ok, errors.New(state)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Consistently calls cond every PollInterval for d and fails the test the first time it does
// not hold: for "this never happens" after the passes that would have done it.
func Consistently(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var broken string
	err := poll.Until(context.Background(), PollInterval, d, func(context.Context) (bool, error) {
		ok, state := cond()
		if !ok {
			broken = state
		}
		return !ok, nil
	})
	if err == nil {
		t.Fatalf("%s no longer holds: %s", what, broken)
	}
}

// NoError adapts a condition written as "nil when done, else why not yet" to Eventually and
// Consistently.
func NoError(cond func() error) func() (bool, string) {
	return func() (bool, string) {
		if err := cond(); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
}
