package cluster

import (
	"fmt"
	"time"
)

// nextReplace returns the replacement of a bad member, if one is due: a member that does not
// answer healthy, whose pod has been running without its etcd ready for at least
// d.ReplaceAfter, while every other member answers healthy and the cluster has its full size
// (one replacement at a time: the fresh member is added before another is judged). The
// operator proves the member is the bad one only that way: its peers form the whole rest of
// the cluster and are healthy, so neither a partition of the majority nor a cluster-wide
// problem (an alarm, no leader) looks like one bad member.
//
// A voting member whose pod is stuck terminating (its node lost: the taint manager deleted it
// and no kubelet finishes the deletion) is judged the same way, its unready time counted from
// its pod's Ready=False; with a volume, that is the only way it is replaced (one without is
// removed as soon as its pod is stuck, by next).
//
// A learner is judged the same way, and only while its etcd container has never restarted. It
// holds nothing of its own, so removing it costs nothing but its catching up again; a learner
// that catches up answers its status (it is promoted once etcd lets it), so only one whose etcd
// runs but does not answer at all is replaced; and one that crash-loops most likely fails on
// the spec, as a fresh one would: it is waited for and reported, not replaced every
// afterSeconds with a volume kept each time. The chaos kind
// member-data-altered met one: a learner added right after a replacement stayed behind its
// leader's snapshot and did not answer for minutes, until its container restarted.
func nextReplace(d Desired, o Observed) (Action, bool) {
	if d.ReplaceAfter <= 0 || len(o.Members) < d.Size {
		return Action{}, false
	}
	var bad *Member
	voters := 0
	for i, m := range o.Members {
		if !m.IsLearner {
			voters++
		}
		if o.Healthy(m.ID) {
			continue
		}
		if bad != nil {
			return Action{}, false
		}
		bad = &o.Members[i]
	}
	if bad == nil {
		return Action{}, false
	}
	p, ok := o.Pods[bad.PodName()]
	// Stuck terminating past its grace period, or deleted by the taint manager from a lost
	// node: no kubelet will finish it, and its volume may be on that node.
	stuck := ok && p.Terminating && p.Stuck
	if !ok || p.UnreadyFor < d.ReplaceAfter || (!stuck && (p.Terminating || p.Phase != "Running")) {
		return Action{}, false
	}
	where := "its etcd has not been ready"
	if stuck {
		where = "its pod is stuck terminating (node lost?) and its etcd has not been ready"
	}
	if bad.IsLearner && p.Restarts > 0 {
		return Action{}, false
	}
	if bad.IsLearner {
		return Action{Kind: ActionReplaceMember, MemberID: bad.ID, Pod: p.Name, Message: fmt.Sprintf(
			"replacing learner %s: %s for %s while the %d voting members are healthy; it holds nothing of its own: it is removed, its volume kept, and a fresh member added",
			p.Name, where, p.UnreadyFor.Round(time.Second), voters)}, true
	}
	return Action{Kind: ActionReplaceMember, MemberID: bad.ID, Pod: p.Name, Message: fmt.Sprintf(
		"replacing member %s: %s for %s while the %d other voting members are healthy; it is removed, its volume kept, and a fresh member added",
		p.Name, where, p.UnreadyFor.Round(time.Second), voters-1)}, true
}
