package cluster

import "testing"

// hashes sets the spec hash of each member pod c-<i> to hs[i].
func (w *world) hashes(hs ...string) *world {
	for i, h := range hs {
		name := "c-" + string(rune('0'+i))
		p := w.o.Pods[name]
		p.SpecHash = h
		w.o.Pods[name] = p
	}
	return w
}

// TestNextRoll: a changed pod spec rolls followers first, one at a time, the leader last after
// leadership moved to the most caught-up follower; members on volumes are evicted, members
// without one removed (and replaced by the scale-up step); nothing rolls while a member trails
// the leader, nor in a cluster of fewer than three members (one down is quorum lost); pods without a recorded hash
// and members already current are left alone; nothing rolls on an unverified member list.
func TestNextRoll(t *testing.T) {
	want := Desired{Name: "c", Size: 3, Version: "3.6.16", PVC: true, SpecHash: "new"}
	emptyDir := want
	emptyDir.PVC = false
	cases := []struct {
		name string
		d    Desired
		w    *world
		kind ActionKind
		pod  string
		to   uint64 // MoveLeader's target
	}{
		{"current", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("new", "new", "new"), ActionNone, "", 0},
		{"no hash recorded", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("", "", ""), ActionNone, "", 0},
		{"follower first", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("old", "old", "old"), ActionRollMember, "c-1", 0},
		{"next follower", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("old", "new", "old"), ActionRollMember, "c-2", 0},
		{"leader last: leadership moves", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("old", "new", "new"), ActionMoveLeader, "c-0", 2},
		{"old leader now a follower", want, newWorld().member(0, "pvc").member(1, "pvc").member(2, "leader", "pvc").hashes("old", "new", "new"), ActionRollMember, "c-0", 0},
		{"without volumes: removed and replaced", emptyDir, newWorld().member(0, "leader").member(1).member(2).hashes("old", "old", "old"), ActionRemoveMember, "c-1", 0},
		{"a lone member without a volume", Desired{Name: "c", Size: 1, Version: "3.6.16", SpecHash: "new"}, newWorld().member(0, "leader").hashes("old"), ActionRollBlocked, "c-0", 0},
		{"a lone member on a volume", Desired{Name: "c", Size: 1, Version: "3.6.16", PVC: true, SpecHash: "new"}, newWorld().member(0, "leader", "pvc").hashes("old"), ActionRollBlocked, "c-0", 0},
		{"two members", Desired{Name: "c", Size: 2, Version: "3.6.16", PVC: true, SpecHash: "new"}, newWorld().member(0, "leader", "pvc").member(1, "pvc").hashes("old", "old"), ActionRollBlocked, "c-0", 0},
		{"a member down", want, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").hashes("old", "old", "old"), ActionWait, "c-1", 0},
		{"upgrade first", want, newWorld().member(0, "leader", "pvc").member(1, "pvc", "old").member(2, "pvc").hashes("old", "old", "old"), ActionUpgradeMember, "c-1", 0},
		{"unverified membership", want, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("old", "old", "old").serializable(), ActionMembershipUnverified, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.d, tc.w.o)
			if got.Kind != tc.kind || (tc.pod != "" && got.Pod != tc.pod) || (tc.to != 0 && got.MemberID != tc.to) {
				t.Fatalf("Next = %s %q to %d (%s), want %s %q to %d", got.Kind, got.Pod, got.MemberID, got.Message, tc.kind, tc.pod, tc.to)
			}
		})
	}
}

// TestNextRollWaitsForCatchUp: a member whose applied index trails the leader's commit index by
// more than MaxRollLag holds the roll, and the follower leadership moves to is the one furthest
// along.
func TestNextRollWaitsForCatchUp(t *testing.T) {
	d := Desired{Name: "c", Size: 3, Version: "3.6.16", PVC: true, SpecHash: "new"}
	w := newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").hashes("old", "new", "old")
	index := func(id, applied, commit uint64) {
		s := w.o.Status[id]
		s.RaftAppliedIndex, s.RaftIndex = applied, commit
		w.o.Status[id] = s
	}
	index(1, 5000, 5000)
	index(2, 5000-MaxRollLag-1, 5000)
	index(3, 5000, 5000)
	if got := Next(d, w.o); got.Kind != ActionWait || got.Pod != "c-1" {
		t.Fatalf("Next = %s %q (%s), want Wait for c-1 to catch up", got.Kind, got.Pod, got.Message)
	}
	index(2, 4990, 5000)
	if got := Next(d, w.o); got.Kind != ActionRollMember || got.Pod != "c-2" {
		t.Fatalf("Next = %s %q, want RollMember c-2", got.Kind, got.Pod)
	}
	w.hashes("old", "new", "new")
	if got := Next(d, w.o); got.Kind != ActionMoveLeader || got.MemberID != 3 {
		t.Fatalf("Next = %s to %d, want MoveLeader to c-2 (ID 3, applied 5000 against c-1's 4990)", got.Kind, got.MemberID)
	}
}
