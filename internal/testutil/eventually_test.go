package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the goroutine, as the
// real one does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine (Fatalf ends it) and returns what failed.
func run(f func(t testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.fatal
}

func TestEventuallyAndConsistently(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(t testing.TB, n *int)
		want string // "" passes; otherwise a part of the failure message
	}{
		{name: "Eventually: true on the third check", f: func(t testing.TB, n *int) {
			Eventually(t, time.Second, "three", func() (bool, string) { *n++; return *n == 3, fmt.Sprint(*n) })
		}},
		{name: "Eventually: never, with the last state", want: "waiting for never: timed out after 300ms: state 3", f: func(t testing.TB, n *int) {
			Eventually(t, 300*time.Millisecond, "never", func() (bool, string) { *n++; return false, "state " + fmt.Sprint(min(*n, 3)) })
		}},
		{name: "Eventually with NoError", f: func(t testing.TB, n *int) {
			Eventually(t, time.Second, "no error", NoError(func() error {
				if *n++; *n < 2 {
					return fmt.Errorf("call %d", *n)
				}
				return nil
			}))
		}},
		{name: "Consistently: holds throughout", f: func(t testing.TB, n *int) {
			Consistently(t, 300*time.Millisecond, "always", func() (bool, string) { *n++; return true, "" })
		}},
		{name: "Consistently: breaks on the second check", want: "nothing happens no longer holds: it happened", f: func(t testing.TB, n *int) {
			Consistently(t, 10*time.Second, "nothing happens", func() (bool, string) { *n++; return *n < 2, "it happened" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			start := time.Now()
			got := run(func(r testing.TB) { tc.f(r, &n) })
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("failed: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("failure %q, want it to contain %q", got, tc.want)
			case time.Since(start) > 5*time.Second:
				t.Fatalf("took %s: a broken Consistently must fail at once", time.Since(start))
			}
		})
	}
}
