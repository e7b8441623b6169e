package etcdbackupschedule

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Errors of Parse, mapped to the InvalidSchedule and InvalidTimeZone reasons.
var (
	ErrInvalidSchedule = errors.New("invalid schedule")
	ErrInvalidTimeZone = errors.New("invalid time zone")
)

// maxMissedScan bounds the runs PlanAt walks through in its scan window.
const maxMissedScan = 100_000

// Schedule is a parsed cron schedule in its time zone.
type Schedule struct {
	cron cron.Schedule
	// wall is the same schedule read in wall-clock time (no DST), used so that a run whose
	// local time falls into a spring-forward gap happens right after the gap instead of
	// being skipped for the day.
	wall *cron.SpecSchedule
	loc  *time.Location
}

// Parse parses a 5-field cron expression (or @hourly, @daily, ...) in timeZone (IANA name;
// nil or empty means UTC).
func Parse(expr string, timeZone *string) (*Schedule, error) {
	loc := time.UTC
	if timeZone != nil && *timeZone != "" {
		l, err := time.LoadLocation(*timeZone)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalidTimeZone, *timeZone, err)
		}
		loc = l
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidSchedule, expr, err)
	}
	s := &Schedule{cron: sched, loc: loc}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		inLoc, wall := *spec, *spec
		inLoc.Location, wall.Location = loc, time.UTC
		s.cron, s.wall = &inLoc, &wall
	}
	// A valid expression that matches no date (0 0 31 2 *: February has no 31st) has no next
	// run: cron's Next gives up after five years and returns zero, which would requeue at once
	// forever. Every date pattern recurs within four years (29 February), so the check is exact.
	if s.cron.Next(neverFiresReference).IsZero() {
		return nil, fmt.Errorf("%w %q: it matches no date, so it never fires", ErrInvalidSchedule, expr)
	}
	return s, nil
}

// neverFiresReference is where Parse looks for a first run: any instant works (see Parse).
var neverFiresReference = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Next returns the first run strictly after t.
//
// Daylight saving time: a run at a local time that does not exist (spring forward, e.g.
// 02:30 in Europe/Berlin on the last Sunday of March) happens at the same offset after the gap
// (03:30) instead of being skipped; a local time that occurs twice (fall back) runs twice, as
// Kubernetes CronJob does. An extra backup is harmless; a missing one is not.
func (s *Schedule) Next(t time.Time) time.Time {
	next := s.cron.Next(t)
	if s.wall == nil || s.loc == time.UTC {
		return next
	}
	// Walk the schedule in wall-clock time and map each wall time back into loc; time.Date
	// moves a wall time inside a gap forward by the gap's length.
	lt := t.In(s.loc)
	w := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), lt.Second(), lt.Nanosecond(), time.UTC)
	for range 3 {
		w = s.wall.Next(w)
		if w.IsZero() {
			break
		}
		cand := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, s.loc)
		if cand.After(t) {
			if next.IsZero() || cand.Before(next) {
				return cand
			}
			break
		}
	}
	return next
}

// Plan is what a schedule should do at a moment.
type Plan struct {
	// Run is the scheduled time of the run to start now, or zero for none.
	Run time.Time
	// Missed counts runs in the window that are not made up (older than Run, or skipped by the
	// starting deadline).
	Missed int
	// TooLate is true when the most recent run was missed by more than the starting deadline.
	TooLate bool
	// Next is the first run after now.
	Next time.Time
}

// PlanAt decides at now which run, if any, is due. since is the last scheduled run (or the
// schedule's creation, or the end of a suspension); runs at or before it are done. At most one
// missed run is made up: the most recent one, and only if it is no older than deadline (nil: no
// deadline). Pure function of its arguments: the controller keeps no state between passes.
func (s *Schedule) PlanAt(since, now time.Time, deadline *time.Duration) Plan {
	p := Plan{Next: s.Next(now)}
	// Start the scan in the shortest recent window that holds a run, so that a long outage of
	// a frequent schedule does not walk through every missed run.
	start, skipped := since, false
	for _, d := range scanWindows {
		w := now.Add(-d)
		if !w.After(since) {
			break
		}
		if t := s.Next(w); !t.IsZero() && !t.After(now) {
			start = w
			skipped = !s.Next(since).After(w)
			break
		}
	}
	n := 0
	for t := s.Next(start); !t.IsZero() && !t.After(now) && n < maxMissedScan; t = s.Next(t) {
		p.Run = t
		n++
	}
	if n > 1 {
		p.Missed = n - 1
	}
	if skipped {
		p.Missed++ // at least one more before the window
	}
	if !p.Run.IsZero() && deadline != nil && now.Sub(p.Run) > *deadline {
		p.TooLate, p.Run = true, time.Time{}
		p.Missed++
	}
	return p
}

// scanWindows are the look-back windows PlanAt tries, shortest first.
var scanWindows = []time.Duration{time.Hour, 25 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 367 * 24 * time.Hour}

// Interval is the time between the first run after t and the one after it: the recovery point
// objective the schedule promises there.
func (s *Schedule) Interval(t time.Time) time.Duration {
	a := s.Next(t)
	return s.Next(a).Sub(a)
}
