package etcdcluster

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// setObservedStatus fills the status fields that only describe what was observed.
func setObservedStatus(c *etcdv1beta2.EtcdCluster, obs *observation) {
	st := &c.Status
	st.ServiceName = c.ClientServiceName()
	st.ClientPort = etcdv1beta2.EtcdClientPort
	st.Selector = member.SelectorString(c)
	st.ControlPaused = c.Spec.Paused
	st.ReplacedVolumes = replacedVolumes(c, obs)
	if !obs.Reachable {
		st.ReadyMembers = 0
		st.Members = etcdv1beta2.MembersStatus{Unready: sortedNames(obs.Pods), Details: unreachableDetails(obs, st.Members.Details)}
		st.Leader = ""
		return
	}
	if mismatch(obs) {
		// Another cluster's members answer: describe none of them as this cluster's.
		return
	}
	if st.ClusterID == "" && obs.Linearizable && obs.AllAnswer(restoredMembers(c)) {
		// Recorded once, from a verified list; from then on every change needs it to match. A
		// cluster restored with all its members at once is recorded once every one of them
		// runs (cluster.Next waits for that too).
		st.ClusterID = fmt.Sprintf("%x", obs.ClusterID)
	}
	st.Size = int32(len(obs.Members)) //nolint:gosec // a member list, never near 2^31
	if rev := lastRevision(obs); rev > 0 {
		st.LastRevision = rev
	}
	var ready, unready []string
	lowest := ""
	for _, m := range obs.Members {
		s := obs.Status[m.ID]
		if obs.Healthy(m.ID) && !m.IsLearner {
			ready = append(ready, m.PodName())
			if lowest == "" || cluster.CompareVersions(s.Version, lowest) < 0 {
				lowest = s.Version
			}
		} else {
			unready = append(unready, m.PodName())
		}
	}
	sort.Strings(ready)
	sort.Strings(unready)
	st.ReadyMembers = int32(len(ready)) //nolint:gosec // a subset of the member list
	prev := st.Members.Details
	st.Members = etcdv1beta2.MembersStatus{Ready: ready, Unready: unready, Outdated: cluster.OutOfDate(member.SpecHash(c), obs.Observed)}
	st.Members.Details, st.Leader = memberDetails(obs, prev)
	if lowest != "" {
		st.CurrentVersion = lowest
	}
}

// mismatch reports whether the members that answered belong to another cluster than the one
// recorded in status.
func mismatch(obs *observation) bool {
	return obs.Reachable && obs.RecordedClusterID != 0 && obs.ClusterID != obs.RecordedClusterID
}

// setConditions sets the conditions and the derived phase from the observation, the step
// taken and its error, and a foreign PodDisruptionBudget in the way (pdbErr).
func setConditions(c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.Action, target string, upgradeErr, stepErr, pdbErr error) {
	gen := c.Generation
	set := func(t string, status bool, reason, msg string) {
		s := metav1.ConditionFalse
		if status {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	voters, healthy := 0, 0
	for _, m := range obs.Members {
		if !m.IsLearner {
			voters++
			if obs.Healthy(m.ID) {
				healthy++
			}
		}
	}
	available := obs.Reachable && healthy*2 > voters
	switch {
	case mismatch(obs):
		set(etcdv1beta2.ClusterConditionAvailable, false, etcdv1beta2.ReasonClusterIDMismatch, fmt.Sprintf("the members that answer belong to etcd cluster %x, not %s", obs.ClusterID, c.Status.ClusterID))
	case available && restoring(c):
		set(etcdv1beta2.ClusterConditionAvailable, false, etcdv1beta2.ReasonRestoring, "the members run, but are not verified against the backup yet (condition Restored)")
	case available:
		set(etcdv1beta2.ClusterConditionAvailable, true, etcdv1beta2.ReasonClusterHealthy, fmt.Sprintf("%d of %d voting members are healthy", healthy, voters))
	default:
		set(etcdv1beta2.ClusterConditionAvailable, false, etcdv1beta2.ReasonEtcdUnreachable, fmt.Sprintf("%d of %d voting members are healthy", healthy, voters))
	}

	size := int(c.Spec.Size)
	switch n := len(obs.Members); {
	case obs.Reachable && takingOver(c) && coreosMembers(obs) > 0:
		set(etcdv1beta2.ClusterConditionScaling, true, etcdv1beta2.ReasonTakingOver,
			fmt.Sprintf("%d members, %d of them made by coreos/etcd-operator: replacing them one at a time by members of this operator's own (%d wanted)", n, coreosMembers(obs), size))
	case !obs.Reachable && !obs.Formed:
		set(etcdv1beta2.ClusterConditionScaling, true, etcdv1beta2.ReasonCreatingSeed, "creating the seed member")
	case obs.Reachable && n < size:
		set(etcdv1beta2.ClusterConditionScaling, true, etcdv1beta2.ReasonScalingUp, fmt.Sprintf("%d of %d members", n, size))
	case obs.Reachable && n > size:
		set(etcdv1beta2.ClusterConditionScaling, true, etcdv1beta2.ReasonScalingDown, fmt.Sprintf("%d members, want %d", n, size))
	default:
		set(etcdv1beta2.ClusterConditionScaling, false, etcdv1beta2.ReasonAsExpected, "member count matches spec.size")
	}

	c.Status.TargetVersion = ""
	newest := cluster.NewestPodVersion(obs.Observed)
	switch {
	case upgradeErr != nil:
		set(etcdv1beta2.ClusterConditionUpgrading, false, etcdv1beta2.ReasonUnsupportedUpgrade, upgradeErr.Error())
	case runningVersion(obs) != "" && (runningVersion(obs) != target || newest != target):
		// A downgrade's first member on the older release makes it the lowest: the newest
		// says members are still leaving the newer one.
		c.Status.TargetVersion = target
		from, how := runningVersion(obs), "upgrading"
		if cluster.IsDowngrade(newest, target) {
			from, how = newest, "downgrading"
		}
		set(etcdv1beta2.ClusterConditionUpgrading, true, etcdv1beta2.ReasonUpgradeInProgress, how+" members from "+from+" to "+target)
	default:
		set(etcdv1beta2.ClusterConditionUpgrading, false, etcdv1beta2.ReasonAsExpected, "every member runs "+target)
	}

	switch outdated := c.Status.Members.Outdated; {
	case act.Kind == cluster.ActionRollBlocked:
		set(etcdv1beta2.ClusterConditionRolling, false, etcdv1beta2.ReasonRollBlocked, act.Message)
	case len(outdated) > 0:
		set(etcdv1beta2.ClusterConditionRolling, true, etcdv1beta2.ReasonRollingUpdate, "members running an older pod spec: "+strings.Join(outdated, ", "))
	default:
		set(etcdv1beta2.ClusterConditionRolling, false, etcdv1beta2.ReasonAsExpected, "every member's pod runs the current spec")
	}

	switch {
	case stepErr != nil:
		set(etcdv1beta2.ClusterConditionDegraded, true, failureReason(stepErr), stepErr.Error())
	case act.Kind == cluster.ActionQuorumLost:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonQuorumLost, act.Message)
	case act.Kind == cluster.ActionMembershipUnverified:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonMembershipUnverified, act.Message)
	case act.Kind == cluster.ActionClusterIDMismatch:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonClusterIDMismatch, act.Message)
	case mismatch(obs):
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonClusterIDMismatch,
			fmt.Sprintf("the members that answer belong to etcd cluster %x, not to %s recorded in status.clusterID", obs.ClusterID, c.Status.ClusterID))
	case pdbErr != nil:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonNotOwned, pdbErr.Error())
	case obs.Reachable && healthy < voters:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonMemberUnhealthy, fmt.Sprintf("members down: %s", strings.Join(c.Status.Members.Unready, ", ")))
	case !obs.Reachable && obs.Formed:
		set(etcdv1beta2.ClusterConditionDegraded, true, etcdv1beta2.ReasonEtcdUnreachable, "no member answers")
	default:
		set(etcdv1beta2.ClusterConditionDegraded, false, etcdv1beta2.ReasonAsExpected, "no problem found")
	}

	switch act.Kind {
	case cluster.ActionNone, cluster.ActionQuorumLost:
		set(etcdv1beta2.ClusterConditionProgressing, false, etcdv1beta2.ReasonAsExpected, "nothing to change")
	case cluster.ActionMembershipUnverified, cluster.ActionClusterIDMismatch, cluster.ActionRollBlocked:
		set(etcdv1beta2.ClusterConditionProgressing, false, string(act.Kind), act.Message)
	case cluster.ActionWaitForSeed:
		set(etcdv1beta2.ClusterConditionProgressing, true, etcdv1beta2.ReasonWaitingForSeed, act.Message)
	default:
		set(etcdv1beta2.ClusterConditionProgressing, true, string(act.Kind), act.Message)
	}
	setSpread(c, obs.pods)
	if act.Kind == cluster.ActionQuorumLost {
		c.Status.Reason = etcdv1beta2.ReasonQuorumLost
	} else {
		c.Status.Reason = ""
	}
	c.Status.Phase = phase(c)
}

// setPaused records that spec.paused stops the operator (or that it does not).
func setPaused(c *etcdv1beta2.EtcdCluster) {
	if c.Spec.Paused {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionPaused, Status: metav1.ConditionTrue,
			Reason: etcdv1beta2.ReasonPausedByUser, Message: "spec.paused is true: the operator changes nothing", ObservedGeneration: c.Generation})
	} else {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionPaused, Status: metav1.ConditionFalse,
			Reason: etcdv1beta2.ReasonAsExpected, Message: "the operator manages the cluster", ObservedGeneration: c.Generation})
	}
	c.Status.ControlPaused = c.Spec.Paused
	c.Status.Phase = phase(c)
}

// phase derives the display phase from the conditions.
func phase(c *etcdv1beta2.EtcdCluster) etcdv1beta2.ClusterPhase {
	is := func(t string) bool { return meta.IsStatusConditionTrue(c.Status.Conditions, t) }
	switch {
	case is(etcdv1beta2.ClusterConditionPaused):
		return etcdv1beta2.ClusterPhasePaused
	case c.Spec.Hibernate && !restoring(c):
		return etcdv1beta2.ClusterPhaseHibernated
	case meta.IsStatusConditionPresentAndEqual(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue) &&
		meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded).Reason == etcdv1beta2.ReasonQuorumLost:
		return etcdv1beta2.ClusterPhaseFailed
	case !is(etcdv1beta2.ClusterConditionAvailable) && (c.Status.ClusterID == "" || restoring(c)):
		return etcdv1beta2.ClusterPhaseCreating
	case is(etcdv1beta2.ClusterConditionUpgrading):
		return etcdv1beta2.ClusterPhaseUpgrading
	case is(etcdv1beta2.ClusterConditionScaling):
		return etcdv1beta2.ClusterPhaseScaling
	case is(etcdv1beta2.ClusterConditionDegraded):
		return etcdv1beta2.ClusterPhaseDegraded
	}
	return etcdv1beta2.ClusterPhaseRunning
}

func sortedNames(m map[string]cluster.PodState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// setFailure records an error that stopped the pass before a step could be chosen.
func setFailure(c *etcdv1beta2.EtcdCluster, err error) {
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionDegraded, Status: metav1.ConditionTrue,
		Reason: failureReason(err), Message: err.Error(), ObservedGeneration: c.Generation})
	c.Status.Phase = phase(c)
}

// failureReason is the Degraded reason of an error that stopped a pass or a step.
func failureReason(err error) string {
	if why := reason.Of(err); why != "" { // SecretNotFound, InvalidCredentials
		return why
	}
	switch {
	case errors.Is(err, errNotOwned):
		return etcdv1beta2.ReasonNotOwned
	case etcdaccess.IsAuthError(err):
		return etcdv1beta2.ReasonAuthFailed
	}
	return etcdv1beta2.ReasonReconcileError
}

// restoredMembers are the members a restore brings back from the backup at once, or nil.
func restoredMembers(c *etcdv1beta2.EtcdCluster) []string {
	b := c.Spec.Bootstrap
	switch {
	case b == nil || b.Restore == nil:
		return nil
	case b.Restore.Source != nil:
		return restoreLive(c)
	}
	return b.Restore.Members
}
