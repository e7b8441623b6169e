package etcdbackupschedule

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// setScheduling sets the Scheduling condition (valid and not suspended: runs are started);
// the transition time comes from the controller's clock, because since() reads it back.
func (r *Reconciler) setScheduling(s *etcdv1beta2.EtcdBackupSchedule, ready bool, reason, msg string) {
	r.setCondition(s, etcdv1beta2.ScheduleConditionScheduling, ready, reason, msg)
}

// setCondition sets condition typ, True when ok, at the controller's clock.
func (r *Reconciler) setCondition(s *etcdv1beta2.EtcdBackupSchedule, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: s.Generation, LastTransitionTime: metav1.Time{Time: r.now()},
	})
}

// freshnessLimit is how old the newest successful backup may be: the schedule's interval after
// it, plus the starting deadline, plus FreshnessGrace.
func freshnessLimit(s *etcdv1beta2.EtcdBackupSchedule, sched *Schedule, last time.Time) time.Duration {
	limit := sched.Interval(last) + FreshnessGrace
	if d := s.Spec.StartingDeadlineSeconds; d != nil {
		limit += time.Duration(*d) * time.Second
	}
	return limit
}

// setFreshness sets BackupFresh and returns how long until it turns False (0 if it is False).
func (r *Reconciler) setFreshness(s *etcdv1beta2.EtcdBackupSchedule, sched *Schedule, now time.Time) time.Duration {
	c := metav1.Condition{Type: etcdv1beta2.ScheduleConditionBackupFresh, ObservedGeneration: s.Generation, LastTransitionTime: metav1.Time{Time: now}}
	var left time.Duration
	if last := s.Status.LastSuccessfulTime; last == nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, etcdv1beta2.ReasonNoSuccessfulBackup, "No backup of this schedule has succeeded yet"
	} else {
		limit := freshnessLimit(s, sched, last.Time)
		age := now.Sub(last.Time)
		if age <= limit {
			left = limit - age
			c.Status, c.Reason = metav1.ConditionTrue, etcdv1beta2.ReasonBackupRecent
		} else {
			c.Status, c.Reason = metav1.ConditionFalse, etcdv1beta2.ReasonBackupTooOld
		}
		c.Message = fmt.Sprintf("Newest successful backup %s completed at %s; fresh until %s", s.Status.LastSuccessfulBackup,
			last.UTC().Format(time.RFC3339), last.Add(limit).UTC().Format(time.RFC3339))
	}
	meta.SetStatusCondition(&s.Status.Conditions, c)
	return left
}
