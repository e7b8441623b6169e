package snapshot

import (
	"context"
	"errors"
	"testing"
	"time"
)

// expiredCtx is a context whose deadline has passed but whose timer has not fired yet: the
// moment in which gRPC already answers DeadlineExceeded and ctx.Err() is still nil (seen in CI
// as a TestTakeTimeout failure).
type expiredCtx struct{ context.Context }

func (expiredCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (expiredCtx) Err() error                  { return nil }

func TestClassify(t *testing.T) {
	cause := errors.New("rpc error: code = DeadlineExceeded")
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done, cancelDone := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelDone()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		timeout bool
	}{
		{"deadline ahead", live, false},
		{"no deadline", context.Background(), false},
		{"timer fired", done, true},
		{"deadline passed, timer not yet fired", expiredCtx{context.Background()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(tc.ctx, time.Second, cause)
			if got := errors.Is(err, ErrTimeout); got != tc.timeout {
				t.Fatalf("classify = %v: ErrTimeout %v, want %v", err, got, tc.timeout)
			}
			if !errors.Is(err, cause) {
				t.Fatalf("classify lost the cause: %v", err)
			}
		})
	}
}
