package etcdcluster

import (
	"sync"
	"time"
)

// revisionLog remembers, per cluster (namespace/name, and its UID: another object of the same
// name starts over), the revision its members answered at over time, at
// most one sample a minute (sparser for a retention of more than a day: at most
// revisionLogSamples per cluster). A NOSPACE recovery under Periodic auto-compaction compacts
// to the revision of the retention window's start, which only such a log tells (etcd keeps no
// time per revision). Memory only: an operator that started less than the retention ago knows
// no revision old enough, and compacts nothing then (etcd's own periodic compactor goes on).
type revisionLog struct {
	mu       sync.Mutex
	clusters map[string]*clusterRevisions
}

type clusterRevisions struct {
	uid     string
	samples []revisionSample
}

type revisionSample struct {
	at  time.Time
	rev int64
}

// revisionLogSamples bounds a cluster's samples: a day of minutes.
const revisionLogSamples = 24 * 60

// record notes that cluster key (namespace/name) of UID uid answered at revision rev at time now,
// keeping what a window of keep needs: every sample inside it and the newest one before it.
func (l *revisionLog) record(key, uid string, now time.Time, rev int64, keep time.Duration) {
	if rev <= 0 || keep <= 0 {
		return
	}
	every := max(time.Minute, keep/revisionLogSamples)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clusters == nil {
		l.clusters = map[string]*clusterRevisions{}
	}
	cr := l.clusters[key]
	if cr == nil || cr.uid != uid {
		cr = &clusterRevisions{uid: uid}
		l.clusters[key] = cr
	}
	s := cr.samples
	if n := len(s); n > 0 {
		switch {
		case rev < s[n-1].rev: // restored to an older revision: what came before is no guide
			s = nil
		case now.Sub(s[n-1].at) < every:
			return
		}
	}
	s = append(s, revisionSample{at: now, rev: rev})
	start := now.Add(-keep)
	first := 0
	for first+1 < len(s) && !s[first+1].at.After(start) {
		first++
	}
	cr.samples = append([]revisionSample(nil), s[first:]...)
}

// at returns the revision cluster key of UID uid had answered at by time t (the newest sample
// not after t), and false when no sample is that old.
func (l *revisionLog) at(key, uid string, t time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cr := l.clusters[key]
	if cr == nil || cr.uid != uid {
		return 0, false
	}
	var rev int64
	ok := false
	for _, s := range cr.samples {
		if s.at.After(t) {
			break
		}
		rev, ok = s.rev, true
	}
	return rev, ok
}

// forget drops the samples of cluster key (namespace/name), which is gone.
func (l *revisionLog) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clusters, key)
}
