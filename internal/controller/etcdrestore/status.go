package etcdrestore

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func isTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// finished reports whether rs succeeded or failed.
func finished(rs *etcdv1beta2.EtcdRestore) bool {
	return isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete) || isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
}

func (r *Reconciler) setCondition(rs *etcdv1beta2.EtcdRestore, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: rs.Generation,
	})
	if typ == etcdv1beta2.RestoreConditionComplete || typ == etcdv1beta2.RestoreConditionFailed {
		setReady(rs)
	}
}

// progress records what the restore is doing now, without finishing it.
func (r *Reconciler) progress(rs *etcdv1beta2.EtcdRestore, phase etcdv1beta2.RestorePhase, msg string) {
	rs.Status.Phase = phase
	r.setCondition(rs, etcdv1beta2.RestoreConditionComplete, metav1.ConditionFalse, etcdv1beta2.ReasonRestoring, msg)
}

// fail finishes rs as failed with reason, and says so in an event.
func (r *Reconciler) fail(rs *etcdv1beta2.EtcdRestore, reason, msg string) {
	r.finish(rs)
	rs.Status.Phase = etcdv1beta2.RestorePhaseFailed
	rs.Status.Succeeded = false
	rs.Status.Reason = msg
	r.setCondition(rs, etcdv1beta2.RestoreConditionFailed, metav1.ConditionTrue, reason, msg)
	r.setCondition(rs, etcdv1beta2.RestoreConditionComplete, metav1.ConditionFalse, reason, "the restore failed: "+msg)
	r.Recorder.Event(rs, corev1.EventTypeWarning, reason, msg)
	restoresTotal.WithLabelValues(rs.Namespace, "failed", reason).Inc()
}

// succeed finishes rs as successful.
func (r *Reconciler) succeed(rs *etcdv1beta2.EtcdRestore, msg string) {
	r.finish(rs)
	rs.Status.Phase = etcdv1beta2.RestorePhaseSucceeded
	rs.Status.Succeeded = true
	rs.Status.Reason = ""
	r.setCondition(rs, etcdv1beta2.RestoreConditionComplete, metav1.ConditionTrue, etcdv1beta2.ReasonRestoreSucceeded, msg)
	r.setCondition(rs, etcdv1beta2.RestoreConditionFailed, metav1.ConditionFalse, etcdv1beta2.ReasonRestoreSucceeded, "the restore succeeded")
	r.Recorder.Event(rs, corev1.EventTypeNormal, etcdv1beta2.ReasonRestoreSucceeded, msg)
	restoresTotal.WithLabelValues(rs.Namespace, "succeeded", etcdv1beta2.ReasonRestoreSucceeded).Inc()
	restoreDuration.WithLabelValues(rs.Namespace).Observe(rs.Status.Duration.Seconds())
}

func (r *Reconciler) finish(rs *etcdv1beta2.EtcdRestore) {
	now := metav1.NewTime(r.now())
	rs.Status.CompletionTime = &now
	if rs.Status.StartTime != nil {
		rs.Status.Duration = &metav1.Duration{Duration: now.Sub(rs.Status.StartTime.Time).Round(time.Millisecond)}
	}
}
