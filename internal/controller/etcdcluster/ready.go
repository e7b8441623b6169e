package etcdcluster

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/readiness"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// stalledReasons are the Degraded reasons under which the operator refuses to act until
// someone changes something: Ready is False with Stalled.
var stalledReasons = []string{etcdv1beta2.ReasonQuorumLost, etcdv1beta2.ReasonMembershipUnverified, etcdv1beta2.ReasonClusterIDMismatch,
	etcdv1beta2.ReasonNotOwned, etcdv1beta2.ReasonRestoreFailed, etcdv1beta2.ReasonSecretNotFound, etcdv1beta2.ReasonInvalidCredentials,
	etcdv1beta2.ReasonInvalidSpec, etcdv1beta2.ReasonQuotaExceeded, etcdv1beta2.ReasonAlarmRaised,
	etcdv1beta2.ReasonVolumeExpansionUnsupported}

// setReady sets Ready (with Reconciling or Stalled) from the conditions and member counts the
// pass wrote: True once the cluster is Available with spec.size ready voting members, at
// spec.version, with nothing degraded and no change in progress.
func setReady(c *etcdv1beta2.EtcdCluster) {
	readiness.Set(&c.Status.Conditions, c.Generation, clusterVerdict(c))
}

func clusterVerdict(c *etcdv1beta2.EtcdCluster) readiness.Verdict {
	conds := c.Status.Conditions
	cond := func(t string, s metav1.ConditionStatus) *metav1.Condition {
		if x := meta.FindStatusCondition(conds, t); x != nil && x.Status == s {
			return x
		}
		return nil
	}
	if x := cond(etcdv1beta2.ClusterConditionPaused, metav1.ConditionTrue); x != nil {
		return readiness.Verdict{State: readiness.Idle, Reason: x.Reason, Message: x.Message}
	}
	if x := cond(etcdv1beta2.ClusterConditionHibernated, metav1.ConditionTrue); x != nil {
		return readiness.Verdict{State: readiness.Idle, Reason: x.Reason, Message: x.Message}
	}
	if x := cond(etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue); x != nil && slices.Contains(stalledReasons, x.Reason) {
		return readiness.Verdict{State: readiness.Stalled, Reason: x.Reason, Message: x.Message}
	}
	if x := cond(etcdv1beta2.ClusterConditionUpgrading, metav1.ConditionFalse); x != nil && x.Reason == etcdv1beta2.ReasonUnsupportedUpgrade {
		return readiness.Verdict{State: readiness.Stalled, Reason: x.Reason, Message: x.Message}
	}
	if x := cond(etcdv1beta2.ClusterConditionRolling, metav1.ConditionFalse); x != nil && x.Reason == etcdv1beta2.ReasonRollBlocked {
		return readiness.Verdict{State: readiness.Stalled, Reason: x.Reason, Message: x.Message}
	}
	// Not there yet: the first condition that says why, in the order a user would look.
	for _, w := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{
		{etcdv1beta2.ClusterConditionAvailable, metav1.ConditionFalse},
		{etcdv1beta2.ClusterConditionScaling, metav1.ConditionTrue},
		{etcdv1beta2.ClusterConditionUpgrading, metav1.ConditionTrue},
		{etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue},
		{etcdv1beta2.ClusterConditionProgressing, metav1.ConditionTrue},
	} {
		if x := cond(w.typ, w.status); x != nil {
			return readiness.Verdict{State: readiness.Reconciling, Reason: x.Reason, Message: x.Message}
		}
	}
	size, st := c.Spec.Size, &c.Status
	switch {
	case cond(etcdv1beta2.ClusterConditionAvailable, metav1.ConditionTrue) == nil:
		return readiness.Verdict{State: readiness.Reconciling, Reason: etcdv1beta2.ReasonCreatingSeed, Message: "the operator has not observed the cluster yet"}
	case st.ReadyMembers != size || st.Size != size:
		return readiness.Verdict{State: readiness.Reconciling, Reason: etcdv1beta2.ReasonMemberUnhealthy,
			Message: fmt.Sprintf("%d of %d members ready (%d in the member list)", st.ReadyMembers, size, st.Size)}
	}
	return readiness.Verdict{State: readiness.Ready, Reason: etcdv1beta2.ReasonClusterHealthy,
		Message: fmt.Sprintf("%d of %d members ready, running etcd %s", st.ReadyMembers, size, st.CurrentVersion)}
}
