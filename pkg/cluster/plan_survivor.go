package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// SurvivorPlan is a recovery of a cluster that lost quorum from its surviving members: the
// member kept, restarted alone with --force-new-cluster, and what goes.
type SurvivorPlan struct {
	// Keep is the survivor with the newest data (the highest raft committed index); Status is
	// its answer.
	Keep   Member
	Status EndpointStatus
	// Others are the other members that still have a volume (survivors with older data, and
	// learners): their volumes are kept, never a member's again; their pods go.
	Others []Member
	// Lost are the voting members whose volumes are gone.
	Lost []Member
	// Candidates describes every surviving voter compared, as "<name> (raft index <i>,
	// revision <r>)".
	Candidates []string
}

// PlanSurvivorRecovery decides whether the cluster o, which lost quorum, may be brought back
// from its survivors, and from which one. volumes holds the names of the members whose volume
// still exists (read fresh, terminating ones included: their members may still run); forced
// names a member whose volume was already chosen by an earlier pass ("" if none), which is
// kept again whatever the answers, so that a pass stopped half-way never chooses a second
// member. It returns why not when it may not:
//   - the members that answer are not those of the recorded cluster;
//   - a majority of the voting members still have their volumes: they may come back (their
//     node NotReady, a partition), and forcing a minority would fork the cluster;
//   - no voting member has a volume left (only a backup can help);
//   - a surviving voter does not answer its status (its data may be the newest), or one has a
//     leader (quorum is not lost).
//
// The survivor kept is the one with the highest raft committed index, then the highest
// revision, then the first name: it holds every entry any survivor committed.
func PlanSurvivorRecovery(o Observed, volumes map[string]bool, forced string) (SurvivorPlan, string) {
	if !o.Reachable {
		return SurvivorPlan{}, "no surviving member answers"
	}
	if o.RecordedClusterID != 0 && o.ClusterID != o.RecordedClusterID {
		return SurvivorPlan{}, fmt.Sprintf("the member that answers belongs to etcd cluster %x, not to %x recorded in status.clusterID", o.ClusterID, o.RecordedClusterID)
	}
	var plan SurvivorPlan
	var survivors []Member
	voters := 0
	// etcd lists members by ID; walk them by name so that the lost, the others and the
	// candidates read the same in status and events whatever IDs the members drew.
	members := slices.Clone(o.Members)
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.PodName(), b.PodName()) })
	for _, m := range members {
		switch {
		case m.IsLearner && volumes[m.PodName()]:
			plan.Others = append(plan.Others, m)
		case m.IsLearner:
		case volumes[m.PodName()]:
			voters++
			survivors = append(survivors, m)
		default:
			voters++
			plan.Lost = append(plan.Lost, m)
		}
	}
	switch {
	case len(survivors)*2 > voters:
		return SurvivorPlan{}, fmt.Sprintf("%d of the %d voting members still have their volumes (%s): they may come back, so no survivor is forced", len(survivors), voters, names(survivors))
	case len(survivors) == 0:
		return SurvivorPlan{}, "no voting member has a volume left: restore the cluster from a backup"
	}
	for _, m := range survivors {
		s, ok := o.Status[m.ID]
		switch {
		case !ok:
			return SurvivorPlan{}, "surviving member " + m.PodName() + " does not answer: its data may be the newest"
		case s.Leader != 0 && len(s.Errors) == 0:
			return SurvivorPlan{}, fmt.Sprintf("surviving member %s follows leader %x: quorum is not lost", m.PodName(), s.Leader)
		}
		plan.Candidates = append(plan.Candidates, fmt.Sprintf("%s (raft index %d, revision %d)", m.PodName(), s.RaftIndex, s.Revision))
	}
	slices.SortFunc(survivors, func(a, b Member) int {
		sa, sb := o.Status[a.ID], o.Status[b.ID]
		if forced != "" && (a.PodName() == forced) != (b.PodName() == forced) {
			if a.PodName() == forced {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(sb.RaftIndex, sa.RaftIndex), cmp.Compare(sb.Revision, sa.Revision), strings.Compare(a.PodName(), b.PodName()))
	})
	plan.Keep, plan.Status = survivors[0], o.Status[survivors[0].ID]
	plan.Others = append(plan.Others, survivors[1:]...)
	return plan, ""
}

// Describe says what the plan keeps and loses, for events and conditions.
func (p SurvivorPlan) Describe() string {
	msg := fmt.Sprintf("keeping member %s (raft index %d, revision %d), the newest of the survivors %s; the volumes of %s are gone",
		p.Keep.PodName(), p.Status.RaftIndex, p.Status.Revision, strings.Join(p.Candidates, ", "), names(p.Lost))
	if len(p.Others) > 0 {
		msg += "; the volumes of " + names(p.Others) + " are kept, no longer members'"
	}
	return msg
}

func names(ms []Member) string { return strings.Join(PodNames(ms), ", ") }

// PodNames are the pod names of ms, in their order.
func PodNames(ms []Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.PodName())
	}
	return out
}

// nextForced holds everything else back while a member runs with --force-new-cluster (a
// recovery from the survivors): once it stands alone, healthy, it is restarted without the
// flag (ActionRestartForced) before any member is added, for a member that restarted with the
// flag after others joined would drop them again.
func nextForced(o Observed) (Action, bool) {
	for _, name := range sortedPods(o.Pods) {
		p := o.Pods[name]
		if !p.ForcedNewCluster || p.Terminating {
			continue
		}
		if len(o.Members) == 1 && o.Members[0].PodName() == name && o.Healthy(o.Members[0].ID) {
			return Action{Kind: ActionRestartForced, MemberID: o.Members[0].ID, Pod: name, Message: "member " + name +
				" stands alone after --force-new-cluster: restarting it without the flag before the cluster grows back"}, true
		}
		return Action{Kind: ActionWait, Pod: name, Message: "waiting for member " + name + ", started with --force-new-cluster, to stand alone"}, true
	}
	return Action{}, false
}
