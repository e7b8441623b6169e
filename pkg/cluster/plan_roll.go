package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// MaxRollLag is how far (in raft entries) a member's applied index may trail the leader's
// commit index for the next member to be rolled: a member that just came back must have caught
// up first, so that two members are never behind at once.
const MaxRollLag = 1000

// OutOfDate lists, in member order, the members whose pods carry a spec hash other than want
// (pods without one are not counted: see PodState.SpecHash).
func OutOfDate(want string, o Observed) []string {
	var out []string
	for _, m := range o.Members {
		if p, ok := o.Pods[m.PodName()]; ok && p.SpecHash != "" && p.SpecHash != want {
			out = append(out, m.PodName())
		}
	}
	return out
}

// nextRoll is the next step of rolling the spec to members whose pods are out of date, taken
// only on a cluster at its size whose members are all healthy voters on their pods' versions
// (next checks that first): followers one at a time, each caught up before the next; the
// leader last, after leadership moved to a caught-up follower. A member on a volume is evicted
// and comes back on it (RecreatePod); a member without one is removed and replaced by a new
// member (its data lives only in its pod), which a one-member cluster cannot afford.
func nextRoll(d Desired, o Observed) Action {
	stale := OutOfDate(d.SpecHash, o)
	if len(stale) == 0 {
		return Action{Kind: ActionNone}
	}
	leader := leaderID(o)
	var leaderStatus EndpointStatus
	for _, s := range o.Status {
		if s.MemberID == leader {
			leaderStatus = s
		}
	}
	for _, m := range o.Members {
		if s := o.Status[m.ID]; s.RaftAppliedIndex+MaxRollLag < leaderStatus.RaftIndex {
			return Action{Kind: ActionWait, Pod: m.PodName(), Message: fmt.Sprintf("rolling the pod spec to %s: waiting for member %s to catch up (applied %d, leader at %d)",
				strings.Join(stale, ", "), m.PodName(), s.RaftAppliedIndex, leaderStatus.RaftIndex)}
		}
	}
	if n := len(o.Members); n < 3 {
		// One member down of one or two is quorum lost, which the PodDisruptionBudget forbids
		// too (it allows no eviction below three members).
		how := "delete the pods yourself, one at a time: each comes back on its volume with the new spec"
		if !d.PVC {
			how = "without volumes a member's data lives only in its pod: scale the cluster to 3 first"
		}
		return Action{Kind: ActionRollBlocked, Pod: stale[0], Message: fmt.Sprintf("the pod spec changed, but %s cannot be rolled: a cluster of %d members cannot lose one without losing quorum; %s",
			strings.Join(stale, ", "), n, how)}
	}
	var target *Member
	for i, m := range o.Members {
		if m.ID == leader || !slices.Contains(stale, m.PodName()) {
			continue
		}
		target = &o.Members[i]
		break
	}
	if target == nil { // only the leader is out of date
		to := moveLeaderTarget(o, leader)
		return Action{Kind: ActionMoveLeader, MemberID: to.ID, Pod: stale[0], Message: fmt.Sprintf("rolling the pod spec to leader %s: moving leadership to %s first", stale[0], to.PodName())}
	}
	msg := fmt.Sprintf("rolling the pod spec to member %s (%d of %d out of date)", target.PodName(), len(stale), len(o.Members))
	if !d.PVC {
		return Action{Kind: ActionRemoveMember, MemberID: target.ID, Pod: target.PodName(), Message: msg + ": without a volume it is removed and a new member replaces it"}
	}
	return Action{Kind: ActionRollMember, MemberID: target.ID, Pod: target.PodName(), Message: msg + ": its pod is evicted and recreated on its volume"}
}

// moveLeaderTarget is the follower leadership moves to: the one with the highest applied index
// (every member is a healthy voter here), the lowest member ID on a tie.
func moveLeaderTarget(o Observed, leader uint64) Member {
	var best Member
	var bestIndex uint64
	for _, m := range o.Members {
		if m.ID == leader {
			continue
		}
		if s := o.Status[m.ID]; best.ID == 0 || s.RaftAppliedIndex > bestIndex || (s.RaftAppliedIndex == bestIndex && m.ID < best.ID) {
			best, bestIndex = m, s.RaftAppliedIndex
		}
	}
	return best
}
