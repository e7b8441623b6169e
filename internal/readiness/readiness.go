// Package readiness sets the conditions that tools outside the operator read to tell a healthy
// object from a broken one: Ready, and the abnormal-true Reconciling and Stalled of the kstatus
// conventions (sigs.k8s.io/cli-utils/pkg/kstatus), which kubectl wait, Flux and Argo CD health
// checks understand. Every kind's controller reduces its own conditions to one Verdict and
// calls Set in the pass that writes its status.
package readiness

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// State is where an object stands relative to its spec.
type State int

const (
	// Ready: the object reached the state its spec asks for.
	Ready State = iota
	// Reconciling: not there yet, and the operator is working on it (or retrying).
	Reconciling
	// Stalled: not there, and the operator will not get there without a change by someone
	// (a failed one-shot, a refused action, an invalid spec, a failed last run).
	Stalled
	// Idle: not there, on purpose (paused, suspended): the operator changes nothing.
	Idle
)

// Verdict is one object's state with the reason and message of the Ready condition.
type Verdict struct {
	State   State
	Reason  string
	Message string
}

// Set writes v into conds: Ready True or False with v's reason and message; Reconciling or
// Stalled True with the same reason when v says so, and removed otherwise (kstatus: these two
// are present only while True). Transition times change only on flips.
func Set(conds *[]metav1.Condition, generation int64, v Verdict) {
	status := metav1.ConditionFalse
	if v.State == Ready {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: etcdv1beta2.ConditionReady, Status: status,
		Reason: v.Reason, Message: v.Message, ObservedGeneration: generation})
	for _, c := range []struct {
		typ   string
		state State
	}{{etcdv1beta2.ConditionReconciling, Reconciling}, {etcdv1beta2.ConditionStalled, Stalled}} {
		if v.State != c.state {
			meta.RemoveStatusCondition(conds, c.typ)
			continue
		}
		meta.SetStatusCondition(conds, metav1.Condition{Type: c.typ, Status: metav1.ConditionTrue,
			Reason: v.Reason, Message: v.Message, ObservedGeneration: generation})
	}
}

// OfOutcome is the verdict of a kind that ends in a Complete and a Failed condition (EtcdBackup,
// EtcdRestore): Ready once complete is True; Stalled once failed is True; Reconciling with
// complete's reason and message while it is False; before is the verdict while complete is not
// set yet.
func OfOutcome(conds []metav1.Condition, complete, failed string, before Verdict) Verdict {
	c := meta.FindStatusCondition(conds, complete)
	f := meta.FindStatusCondition(conds, failed)
	switch {
	case c != nil && c.Status == metav1.ConditionTrue:
		return Verdict{State: Ready, Reason: c.Reason, Message: c.Message}
	case f != nil && f.Status == metav1.ConditionTrue:
		return Verdict{State: Stalled, Reason: f.Reason, Message: f.Message}
	case c != nil:
		return Verdict{State: Reconciling, Reason: c.Reason, Message: c.Message}
	}
	return before
}
