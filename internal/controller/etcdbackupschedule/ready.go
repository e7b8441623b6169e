package etcdbackupschedule

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/readiness"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// setReady sets Ready (with Stalled) at the end of a pass, from Scheduling, the newest finished
// EtcdBackup among children (sorted newest run first) and DrillPassed. Before the schedule was
// parsed once (Scheduling absent) nothing is known and Ready is left alone.
func (r *Reconciler) setReady(s *etcdv1beta2.EtcdBackupSchedule, children []etcdv1beta2.EtcdBackup) {
	if meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionScheduling) == nil {
		return
	}
	readiness.Set(&s.Status.Conditions, s.Generation, scheduleVerdict(s, children))
}

// scheduleVerdict: Ready while the schedule runs and neither its newest finished backup nor its
// newest finished drill failed; not Ready, and neither Reconciling nor Stalled, while suspended;
// Stalled otherwise: an invalid schedule or time zone, a failed backup (until a newer one
// succeeds), a failed drill (until a newer one passes); Reconciling while a continuous capture
// is stopped and retrying (not while it waits for its first full backup).
func scheduleVerdict(s *etcdv1beta2.EtcdBackupSchedule, children []etcdv1beta2.EtcdBackup) readiness.Verdict {
	conds := s.Status.Conditions
	sc := meta.FindStatusCondition(conds, etcdv1beta2.ScheduleConditionScheduling)
	switch {
	case sc.Status == metav1.ConditionTrue:
	case sc.Reason == etcdv1beta2.ReasonScheduleSuspended:
		return readiness.Verdict{State: readiness.Idle, Reason: sc.Reason, Message: sc.Message}
	default:
		return readiness.Verdict{State: readiness.Stalled, Reason: sc.Reason, Message: sc.Message}
	}
	for i := range children {
		b := &children[i]
		if !b.IsFinished() {
			continue
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			why := b.Status.Reason
			if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1beta2.BackupConditionFailed); c != nil {
				why = c.Reason + ": " + why
			}
			return readiness.Verdict{State: readiness.Stalled, Reason: etcdv1beta2.ReasonBackupFailed,
				Message: fmt.Sprintf("The newest finished backup, EtcdBackup %s, failed (%s); the schedule goes on, and is Ready again once a backup succeeds", b.Name, why)}
		}
		break
	}
	if d := meta.FindStatusCondition(conds, etcdv1beta2.ScheduleConditionDrillPassed); d != nil && d.Status == metav1.ConditionFalse && d.Reason == etcdv1beta2.ReasonDrillFailed {
		return readiness.Verdict{State: readiness.Stalled, Reason: d.Reason, Message: d.Message}
	}
	// A capture that stopped retries by itself; one that waits for its full backup is on its way.
	if c := meta.FindStatusCondition(conds, etcdv1beta2.ScheduleConditionCapturing); c != nil && c.Status == metav1.ConditionFalse && c.Reason != etcdv1beta2.ReasonWaitingForBackup {
		return readiness.Verdict{State: readiness.Reconciling, Reason: c.Reason, Message: "Continuous capture: " + c.Message}
	}
	msg := sc.Message
	if n := s.Status.LastSuccessfulBackup; n != "" {
		msg += "; newest successful backup " + n
	}
	return readiness.Verdict{State: readiness.Ready, Reason: etcdv1beta2.ReasonAsExpected, Message: msg}
}
