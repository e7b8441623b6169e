package cluster

import (
	"fmt"
	"time"
)

// nextReplace returns the replacement of a bad member, if one is due: a voting member that
// does not answer healthy, whose pod has been running without its etcd ready for at least
// d.ReplaceAfter, while every other voting member answers healthy and the cluster has its full
// size (one replacement at a time: the fresh member is added before another is judged). The
// operator proves the member is the bad one only that way: its peers form the whole rest of
// the cluster and are healthy, so neither a partition of the majority nor a cluster-wide
// problem (an alarm, no leader) looks like one bad member. Learners are never replaced: a
// learner holds nothing of its own, and one that fails to start with the current spec would
// fail again as a fresh member (it is waited for, and reported).
func nextReplace(d Desired, o Observed) (Action, bool) {
	if d.ReplaceAfter <= 0 || len(o.Members) < d.Size {
		return Action{}, false
	}
	var bad *Member
	for i, m := range o.Members {
		if o.Healthy(m.ID) {
			continue
		}
		if m.IsLearner || bad != nil {
			return Action{}, false
		}
		bad = &o.Members[i]
	}
	if bad == nil {
		return Action{}, false
	}
	p, ok := o.Pods[bad.PodName()]
	if !ok || p.Terminating || p.Phase != "Running" || p.UnreadyFor < d.ReplaceAfter {
		return Action{}, false
	}
	return Action{Kind: ActionReplaceMember, MemberID: bad.ID, Pod: p.Name, Message: fmt.Sprintf(
		"replacing member %s: its etcd has not been ready for %s while the %d other voting members are healthy; it is removed, its volume kept, and a fresh member added",
		p.Name, p.UnreadyFor.Round(time.Second), len(o.Members)-1)}, true
}
