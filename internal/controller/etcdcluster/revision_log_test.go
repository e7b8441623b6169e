package etcdcluster

import (
	"testing"
	"time"
)

// TestRevisionLog: samples at most once a minute, only as far back as the window needs (every
// sample inside it and the newest before it), the revision as of a time, and a fresh start for
// another object of the name or a revision that went back (a restore).
func TestRevisionLog(t *testing.T) {
	var l revisionLog
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	// Every 20 s for 3 h, one revision a second.
	for s := 0; s <= 3*3600; s += 20 {
		l.record("ns/c", "u1", t0.Add(time.Duration(s)*time.Second), int64(1000+s), time.Hour)
	}
	now := t0.Add(3 * time.Hour)
	if n := len(l.clusters["ns/c"].samples); n < 60 || n > 62 {
		t.Fatalf("%d samples kept for a 1 h window at one a minute, want 61 or 62", n)
	}
	rev, ok := l.at("ns/c", "u1", now.Add(-time.Hour))
	if want := int64(1000 + 2*3600); !ok || rev != want {
		t.Fatalf("revision an hour ago: %d (%t), want %d", rev, ok, want)
	}
	if rev, ok := l.at("ns/c", "u1", now.Add(-2*time.Hour)); ok {
		t.Fatalf("revision two hours ago: %d, want none kept", rev)
	}
	if _, ok := l.at("ns/c", "u2", now.Add(-time.Hour)); ok {
		t.Fatal("another object of the name got this one's revisions")
	}
	// A restore sets the revision back: the log starts over.
	l.record("ns/c", "u1", now.Add(time.Minute), 50, time.Hour)
	if rev, ok := l.at("ns/c", "u1", now); ok {
		t.Fatalf("after the revision went back, the revision at %s is %d; want none", now, rev)
	}
	// A day's retention samples less often than once a minute only beyond a day.
	var long revisionLog
	for s := 0; s <= 3*24*3600; s += 30 {
		long.record("ns/d", "u", t0.Add(time.Duration(s)*time.Second), int64(s+1), 48*time.Hour)
	}
	if n := len(long.clusters["ns/d"].samples); n > revisionLogSamples+2 {
		t.Fatalf("%d samples for a 48 h window, want at most %d", n, revisionLogSamples+2)
	}
	l.forget("ns/c")
	if _, ok := l.at("ns/c", "u1", now.Add(time.Hour)); ok {
		t.Fatal("forgotten cluster still has revisions")
	}
}
