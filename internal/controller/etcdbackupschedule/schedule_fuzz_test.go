package etcdbackupschedule

import (
	"errors"
	"testing"
	"time"
)

// scheduleBudget bounds one Parse plus the Next, PlanAt and Interval calls of a reconcile.
// Generous for a loaded CI machine; a schedule that walks minute by minute through years takes
// far longer.
const scheduleBudget = 2 * time.Second

// FuzzSchedule: any schedule and time zone either fail with ErrInvalidSchedule or
// ErrInvalidTimeZone, or give a Schedule whose next run is after now (or zero: never), whose
// plan only starts a run in (since, now], and whose computation stays within scheduleBudget.
func FuzzSchedule(f *testing.F) {
	now := time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC).Unix()
	for _, s := range [][2]string{
		{"61 * * * *", ""}, {"0 * * * *", "Mars/Olympus_Mons"}, {"@daily", ""}, {"@hourly", ""},
		{"0 */6 * * *", ""}, {"30 2 * * MON-FRI", ""}, {"30 2 * * *", "Europe/Berlin"},
		{"30 * * * *", "Europe/Berlin"}, {"0 0 31 2 *", ""}, {"*/0 * * * *", ""}, {"@every 1s", "Asia/Kolkata"},
		{"CRON_TZ=America/New_York 0 3 * * *", "UTC"}, {"0 0 29 2 1", "Pacific/Apia"}, {"* * * * *", "Local"},
		{"0 2 * * *", "../../etc/passwd"}, {"0 2 * * *", "America/Sao_Paulo"},
	} {
		f.Add(s[0], s[1], now, int64(3600), int64(-1))
		f.Add(s[0], s[1], now, int64(400*24*3600), int64(60))
	}
	f.Fuzz(func(t *testing.T, expr, timeZone string, nowSec, sinceAgo, deadlineSec int64) {
		// now is a wall clock between 1970 and 2200; since is up to 10 years before it.
		now := time.Unix(0, 0).UTC().Add(time.Duration(uint64(nowSec)%uint64(230*365*24*3600)) * time.Second)
		since := now.Add(-time.Duration(uint64(sinceAgo)%uint64(10*366*24*3600)) * time.Second)
		var deadline *time.Duration
		if deadlineSec >= 0 {
			d := time.Duration(deadlineSec%(366*24*3600)) * time.Second
			deadline = &d
		}
		start := time.Now()
		s, err := Parse(expr, &timeZone)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchedule) && !errors.Is(err, ErrInvalidTimeZone) {
				t.Fatalf("Parse(%q, %q) = %v, want ErrInvalidSchedule or ErrInvalidTimeZone", expr, timeZone, err)
			}
			return
		}
		next := s.Next(now)
		if !next.IsZero() && !next.After(now) {
			t.Fatalf("Next(%v) = %v for %q in %q: not after now", now, next, expr, timeZone)
		}
		p := s.PlanAt(since, now, deadline)
		if !p.Run.IsZero() && (!p.Run.After(since) || p.Run.After(now)) {
			t.Fatalf("PlanAt(%v, %v) runs %v for %q in %q: outside (since, now]", since, now, p.Run, expr, timeZone)
		}
		if !p.Next.Equal(next) || p.Missed < 0 || (p.TooLate && !p.Run.IsZero()) {
			t.Fatalf("PlanAt(%v, %v) = %+v for %q in %q (Next %v)", since, now, p, expr, timeZone, next)
		}
		if after := s.Next(next); !next.IsZero() && !after.IsZero() && s.Interval(now) <= 0 {
			t.Fatalf("Interval(%v) = %v for %q in %q", now, s.Interval(now), expr, timeZone)
		}
		if took := time.Since(start); took > scheduleBudget {
			t.Fatalf("%q in %q at %v took %v", expr, timeZone, now, took)
		}
	})
}
