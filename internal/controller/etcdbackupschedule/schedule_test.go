package etcdbackupschedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, expr, tz string) *Schedule {
	t.Helper()
	var zone *string
	if tz != "" {
		zone = &tz
	}
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runs(s *Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = s.Next(t)
		out = append(out, t)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse("61 * * * *", nil); !errors.Is(err, ErrInvalidSchedule) {
		t.Fatalf("err = %v, want ErrInvalidSchedule", err)
	}
	tz := "Mars/Olympus_Mons"
	if _, err := Parse("0 * * * *", &tz); !errors.Is(err, ErrInvalidTimeZone) {
		t.Fatalf("err = %v, want ErrInvalidTimeZone", err)
	}
	for _, never := range []string{"0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"} {
		if _, err := Parse(never, nil); !errors.Is(err, ErrInvalidSchedule) || !strings.Contains(err.Error(), "never fires") {
			t.Fatalf("Parse(%q) = %v, want ErrInvalidSchedule: never fires", never, err)
		}
	}
	for _, ok := range []string{"@daily", "@hourly", "0 */6 * * *", "30 2 * * MON-FRI", "0 0 29 2 *", "0 0 31 * *"} {
		if _, err := Parse(ok, nil); err != nil {
			t.Fatalf("Parse(%q): %v", ok, err)
		}
	}
}

// TestDSTEuropeBerlin: "30 2 * * *" in Europe/Berlin runs every day across both changes. On
// spring-forward day 02:30 does not exist and the run happens at 03:30 CEST; on fall-back day
// 02:30 exists twice and runs twice (an extra backup, never a missing one).
func TestDSTEuropeBerlin(t *testing.T) {
	s := mustParse(t, "30 2 * * *", "Europe/Berlin")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	spring := runs(s, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), 3)
	wantSpring := []time.Time{utc("2026-03-29T01:30:00Z"), utc("2026-03-30T00:30:00Z"), utc("2026-03-31T00:30:00Z")}
	for i := range wantSpring {
		if !spring[i].Equal(wantSpring[i]) {
			t.Fatalf("spring forward runs %v, want %v", spring, wantSpring)
		}
	}
	if got := spring[0].In(berlin); got.Hour() != 3 || got.Minute() != 30 {
		t.Fatalf("gap run at %v local, want 03:30 CEST", got)
	}
	fall := runs(s, time.Date(2026, 10, 24, 12, 0, 0, 0, berlin), 3)
	wantFall := []time.Time{utc("2026-10-25T00:30:00Z"), utc("2026-10-25T01:30:00Z"), utc("2026-10-26T01:30:00Z")}
	for i := range wantFall {
		if !fall[i].Equal(wantFall[i]) {
			t.Fatalf("fall back runs %v, want %v", fall, wantFall)
		}
	}
	// Hourly schedules are unaffected by the wall-clock correction: every real hour.
	h := mustParse(t, "30 * * * *", "Europe/Berlin")
	hr := runs(h, utc("2026-03-28T23:00:00Z"), 4)
	for i := 1; i < len(hr); i++ {
		if hr[i].Sub(hr[i-1]) != time.Hour {
			t.Fatalf("hourly runs across spring forward: %v", hr)
		}
	}
}

func TestPlanAt(t *testing.T) {
	s := mustParse(t, "0 * * * *", "") // hourly, UTC
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	dur := func(d time.Duration) *time.Duration { return &d }
	cases := []struct {
		name     string
		since    time.Time
		now      time.Time
		deadline *time.Duration
		run      time.Time
		missed   int
		tooLate  bool
		next     time.Time
	}{
		{name: "not yet due", since: t0.Add(5 * time.Minute), now: t0.Add(30 * time.Minute), next: t0.Add(time.Hour)},
		{name: "due exactly", since: t0.Add(5 * time.Minute), now: t0.Add(time.Hour), run: t0.Add(time.Hour), next: t0.Add(2 * time.Hour)},
		{name: "due late", since: t0, now: t0.Add(70 * time.Minute), run: t0.Add(time.Hour), next: t0.Add(2 * time.Hour)},
		{name: "already ran", since: t0.Add(time.Hour), now: t0.Add(70 * time.Minute), next: t0.Add(2 * time.Hour)},
		{name: "missed runs capped to the newest", since: t0, now: t0.Add(5*time.Hour + 10*time.Minute), run: t0.Add(5 * time.Hour), missed: 4, next: t0.Add(6 * time.Hour)},
		{name: "long outage", since: t0, now: t0.Add(90*24*time.Hour + time.Minute), run: t0.Add(90 * 24 * time.Hour), missed: 2160, next: t0.Add(90*24*time.Hour + time.Hour)},
		{name: "within deadline", since: t0, now: t0.Add(65 * time.Minute), deadline: dur(10 * time.Minute), run: t0.Add(time.Hour), next: t0.Add(2 * time.Hour)},
		{name: "past deadline", since: t0, now: t0.Add(75 * time.Minute), deadline: dur(10 * time.Minute), tooLate: true, missed: 1, next: t0.Add(2 * time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := s.PlanAt(tc.since, tc.now, tc.deadline)
			if !p.Run.Equal(tc.run) || p.TooLate != tc.tooLate || !p.Next.Equal(tc.next) {
				t.Fatalf("PlanAt = %+v", p)
			}
			if tc.missed != 0 && p.Missed < 1 || tc.missed == 0 && p.Missed != 0 {
				t.Fatalf("missed = %d, want %d", p.Missed, tc.missed)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	s := mustParse(t, "0 */6 * * *", "")
	if got := s.Interval(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)); got != 6*time.Hour {
		t.Fatalf("Interval = %s", got)
	}
}
