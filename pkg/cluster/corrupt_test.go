package cluster

import (
	"strings"
	"testing"
)

func hashesOf(rev int64, hs ...uint32) map[uint64]KVHash {
	out := map[uint64]KVHash{}
	for i, h := range hs {
		out[uint64(i+1)] = KVHash{MemberID: uint64(i + 1), Revision: rev, CompactRevision: 5, Hash: h}
	}
	return out
}

// TestPlanCorrupt: a member is replaced only when it alone differs from the hash every other
// voting member has at the same revision, whichever member the alarm names; anything less
// proven waits and says why.
func TestPlanCorrupt(t *testing.T) {
	three := func() Observed { return newWorld().member(0).member(1).member(2).o }
	alarm := func(id uint64) []Alarm { return []Alarm{{MemberID: id, Type: AlarmCorrupt}} }
	skew := hashesOf(40, 7, 7, 9)
	skew[2] = KVHash{MemberID: 2, Revision: 41, CompactRevision: 5, Hash: 7}
	learner := newWorld().member(0).member(1).member(2, "learner").o
	cases := []struct {
		name    string
		o       Observed
		size    int
		alarms  []Alarm
		hashes  map[uint64]KVHash
		replace string
		disarm  int
		why     string
	}{
		{"the named member differs", three(), 3, alarm(3), hashesOf(40, 7, 7, 9), "c-2", 1, "c-2 alone differs"},
		{"a corrupt leader, a follower named", three(), 3, alarm(2), hashesOf(40, 9, 7, 7), "c-0", 1, "c-0 alone differs"},
		{"the whole cluster named (no quorum of hashes in etcd's check)", three(), 3, alarm(0), hashesOf(40, 7, 9, 7), "c-1", 1, "c-1 alone differs"},
		{"every hash differs", three(), 3, alarm(3), hashesOf(40, 7, 8, 9), "", 0, "no single member differs"},
		{"two against two", newWorld().member(0).member(1).member(2).member(3).o, 4, alarm(4), hashesOf(40, 7, 7, 9, 9), "", 0, "no single member differs"},
		{"all agree", three(), 3, alarm(3), hashesOf(40, 7, 7, 7), "", 0, "none is proven corrupt"},
		{"a member does not answer", three(), 3, alarm(3), map[uint64]KVHash{1: {Revision: 40, Hash: 7}, 2: {Revision: 40, Hash: 7}}, "", 0, "c-2 did not answer"},
		{"different revisions", three(), 3, alarm(3), skew, "", 0, "different revisions"},
		{"below full size", newWorld().member(0).member(1).member(2).o, 5, alarm(3), hashesOf(40, 7, 7, 9), "", 0, "full size"},
		{"a learner", learner, 3, alarm(3), hashesOf(40, 7, 7, 9), "", 0, "learner"},
		{"two members", newWorld().member(0).member(1).o, 2, alarm(2), hashesOf(40, 7, 9), "", 0, "at least three"},
		{"the named member is gone already", three(), 3, alarm(9), hashesOf(40, 7, 7, 7), "", 1, "no longer in the membership"},
		{"no CORRUPT alarm", three(), 3, []Alarm{{MemberID: 1, Type: AlarmNoSpace}}, hashesOf(40, 7, 7, 9), "", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanCorrupt(tc.o, tc.size, tc.alarms, tc.hashes)
			if p.Replace.PodName() != tc.replace && !(tc.replace == "" && p.Replace.ID == 0) {
				t.Errorf("replace %q, want %q (%s)", p.Replace.PodName(), tc.replace, p.Why)
			}
			if tc.replace == "" && p.Replace.ID != 0 {
				t.Errorf("replace %q, want none (%s)", p.Replace.PodName(), p.Why)
			}
			if len(p.Disarm) != tc.disarm {
				t.Errorf("disarm %v, want %d alarms", p.Disarm, tc.disarm)
			}
			if !strings.Contains(p.Why, tc.why) {
				t.Errorf("why %q, want it to say %q", p.Why, tc.why)
			}
		})
	}
}
