package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// nextTakeOver is the next step of taking over, in place, a cluster whose members
// coreos/etcd-operator made (Desired.TakeOver; PodState.Coreos marks their pods). next calls it
// only on a reachable cluster with quorum whose members are all healthy, started voters on
// their pods' versions, so each step below starts from a whole cluster:
//   - while the members number no more than Size and fewer than Size are this operator's own,
//     a member of its own is added (a learner, promoted by the next steps): the cluster grows
//     by one at most above Size;
//   - otherwise one coreos member goes: a follower first; the last one, when it leads, only
//     after leadership moved to one of this operator's members. Its pod is deleted with it.
//
// The data never moves: the new members replicate it from the running ones, and the cluster
// keeps its ID, revisions, leases and Services. ok is false when no coreos member is left (or
// no go-ahead was given): the usual steps (scale, upgrade, roll) follow.
func nextTakeOver(d Desired, o Observed) (Action, bool) {
	if !d.TakeOver {
		return Action{}, false
	}
	var coreos []Member
	ours := 0
	for _, m := range o.Members {
		if o.Pods[m.PodName()].Coreos {
			coreos = append(coreos, m)
		} else {
			ours++
		}
	}
	if len(coreos) == 0 {
		return Action{}, false
	}
	names := make([]string, len(coreos))
	for i, m := range coreos {
		names[i] = m.PodName()
	}
	slices.Sort(names)
	left := fmt.Sprintf("taking over from coreos/etcd-operator (%d of %d members its own, coreos members %s left)", ours, len(o.Members), strings.Join(names, ", "))
	if n := len(o.Members); n <= d.Size && ours < d.Size {
		name := NextMemberName(d.Name, o)
		return Action{Kind: ActionAddMember, Pod: name, Message: fmt.Sprintf("%s: adding member %s (%d -> %d)", left, name, n, n+1)}, true
	}
	leader := leaderID(o)
	slices.SortFunc(coreos, func(a, b Member) int { return strings.Compare(a.PodName(), b.PodName()) })
	for _, m := range coreos {
		if m.ID != leader {
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: fmt.Sprintf("%s: removing coreos member %s (%d -> %d)", left, m.PodName(), len(o.Members), len(o.Members)-1)}, true
		}
	}
	// Only the leader is a coreos member: leadership moves to the member of this operator's
	// own that is furthest along, then the next pass removes it as a follower.
	to := moveLeaderTarget(o, leader)
	return Action{Kind: ActionMoveLeader, MemberID: to.ID, Pod: coreos[0].PodName(), Message: fmt.Sprintf("%s: moving leadership from coreos member %s to %s before removing it", left, coreos[0].PodName(), to.PodName())}, true
}

// takeOverSurge is how many members a takeover may add above Size: one while a coreos member
// is left (the member of this operator's own that replaces it joins before it goes), else none.
func takeOverSurge(d Desired, o Observed) int {
	if !d.TakeOver {
		return 0
	}
	for _, m := range o.Members {
		if o.Pods[m.PodName()].Coreos {
			return 1
		}
	}
	return 0
}
