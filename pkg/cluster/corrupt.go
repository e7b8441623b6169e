package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// CorruptPlan is what the operator does about a CORRUPT alarm.
type CorruptPlan struct {
	// Replace is the member proven corrupt: its hash differs from the one every other voting
	// member has at the same revision. Zero when none is proven.
	Replace Member
	// Disarm are the CORRUPT alarms cleared once Replace is out of the membership (all of
	// them: a periodic check blames the first follower that disagrees with a corrupt leader),
	// or at once when every alarm names a member that is no longer one (a replacement cut
	// short after the removal).
	Disarm []Alarm
	// Why says what was found: the hashes compared, or why nothing is done.
	Why string
}

// CorruptAlarms are the CORRUPT alarms among alarms.
func CorruptAlarms(alarms []Alarm) []Alarm {
	var out []Alarm
	for _, a := range alarms {
		if a.Type == AlarmCorrupt {
			out = append(out, a)
		}
	}
	return out
}

// PlanCorrupt decides what to do about the CORRUPT alarms of a cluster of size voting members
// from every member's hash of its key-value store (hashes by member ID, asked at one revision
// while the alarm stops writes). It proves a member corrupt only this way: the cluster has its
// full size of voting members, at least three, every one answered at the same revision and
// compacted revision, and all but one share a hash that the one does not have. Nothing else is
// acted on: with two hashes among fewer agreeing members, a member that does not answer, or
// members at different revisions, it says why and waits. The member the alarm names does not
// decide: etcd's periodic check blames the first follower that differs from the leader, so a
// corrupt leader gets a healthy follower named.
func PlanCorrupt(o Observed, size int, alarms []Alarm, hashes map[uint64]KVHash) CorruptPlan {
	corrupt := CorruptAlarms(alarms)
	if len(corrupt) == 0 {
		return CorruptPlan{}
	}
	ids := map[uint64]bool{}
	for _, m := range o.Members {
		ids[m.ID] = true
	}
	if o.Linearizable && !slices.ContainsFunc(corrupt, func(a Alarm) bool { return a.MemberID == 0 || ids[a.MemberID] }) {
		return CorruptPlan{Disarm: corrupt, Why: "every CORRUPT alarm names a member that is no longer in the membership"}
	}
	switch {
	case !o.Linearizable:
		return CorruptPlan{Why: "the member list is not linearizable"}
	case len(o.Members) < 3 || len(o.Members) != size:
		return CorruptPlan{Why: fmt.Sprintf("the cluster has %d members (spec %d): a corrupt member is proven only among at least three at the full size", len(o.Members), size)}
	}
	byHash := map[uint32][]Member{}
	var first KVHash
	var seen []string
	for i, m := range o.Members {
		if m.IsLearner {
			return CorruptPlan{Why: "member " + m.PodName() + " is a learner"}
		}
		h, ok := hashes[m.ID]
		if !ok {
			return CorruptPlan{Why: "member " + m.PodName() + " did not answer its hash"}
		}
		if i == 0 {
			first = h
		}
		if h.Revision != first.Revision || h.CompactRevision != first.CompactRevision {
			return CorruptPlan{Why: fmt.Sprintf("the members hashed different revisions (%s at %d compacted at %d, %s at %d compacted at %d): asked again later",
				o.Members[0].PodName(), first.Revision, first.CompactRevision, m.PodName(), h.Revision, h.CompactRevision)}
		}
		byHash[h.Hash] = append(byHash[h.Hash], m)
		seen = append(seen, fmt.Sprintf("%s %08x", m.PodName(), h.Hash))
	}
	slices.Sort(seen)
	found := fmt.Sprintf("hashes at revision %d: %s", first.Revision, strings.Join(seen, ", "))
	if len(byHash) == 1 {
		return CorruptPlan{Why: found + ": every member has the same hash, so none is proven corrupt"}
	}
	if len(byHash) == 2 { // with three members or more, a group of one leaves a majority agreeing
		for _, ms := range byHash {
			if len(ms) == 1 {
				return CorruptPlan{Replace: ms[0], Disarm: corrupt, Why: found + ": member " + ms[0].PodName() + " alone differs from the others"}
			}
		}
	}
	return CorruptPlan{Why: found + ": no single member differs from all the others"}
}
