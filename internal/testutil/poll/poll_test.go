package poll

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	notYet := errors.New("not yet: 2 of 3")
	for _, tc := range []struct {
		name    string
		trueOn  int // the call that reports true; 0: never
		ctx     func() context.Context
		wantErr string
	}{
		{name: "true at once", trueOn: 1},
		{name: "true on the third call", trueOn: 3},
		{name: "never: the last reason", wantErr: "timed out after 50ms: not yet: 2 of 3"},
		{name: "ctx ends first", ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, wantErr: "not yet: 2 of 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			calls := 0
			err := Until(ctx, time.Millisecond, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
				calls++
				if ctx.Err() != nil && tc.ctx == nil {
					t.Errorf("cond called with an ended ctx")
				}
				return calls == tc.trueOn, notYet
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Until = %v, want nil", err)
			case tc.wantErr == "" && calls != tc.trueOn:
				t.Fatalf("cond called %d times, want %d", calls, tc.trueOn)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, notYet)):
				t.Fatalf("Until = %v, want an error wrapping %q", err, tc.wantErr)
			}
		})
	}
}
