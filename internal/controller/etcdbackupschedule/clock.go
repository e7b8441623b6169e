package etcdbackupschedule

import "time"

// Clock tells the time. The controller reads it once per pass; tests inject a fake one and
// never sleep.
type Clock interface {
	Now() time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }
