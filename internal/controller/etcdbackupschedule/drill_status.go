package etcdbackupschedule

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// drills are a schedule's drill EtcdRestores, as observed in one pass.
type drills struct {
	// items are sorted newest scheduled run first.
	items []etcdv1beta2.EtcdRestore
	// active are the names of the drills that have not finished.
	active []string
	// backups are the EtcdBackups the active drills restore: the history limits keep them.
	backups map[string]bool
}

// observeDrills lists the schedule's drill EtcdRestores, records the newest finished one in
// status.lastDrill and the DrillPassed condition (with an event when a drill finished), and
// deletes the oldest finished drills beyond restoreDrill.historyLimit.
func (r *Reconciler) observeDrills(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule) (*drills, error) {
	list := &etcdv1beta2.EtcdRestoreList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{DrillLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing drill EtcdRestores of schedule %s/%s: %w", s.Namespace, s.Name, err)
	}
	d := &drills{backups: map[string]bool{}}
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, s) {
			d.items = append(d.items, rs)
		}
	}
	slices.SortFunc(d.items, func(a, b etcdv1beta2.EtcdRestore) int { return drillTime(&b).Compare(drillTime(&a)) })

	var newest *etcdv1beta2.EtcdRestore
	for i := range d.items {
		rs := &d.items[i]
		if !restoreFinished(rs) {
			d.active = append(d.active, rs.Name)
			if rs.Spec.BackupRef != nil {
				d.backups[rs.Spec.BackupRef.Name] = true
			}
		} else if newest == nil {
			newest = rs
		}
	}
	if newest != nil {
		r.recordDrill(s, newest)
	}
	switch {
	case s.Status.LastDrill != nil:
		if s.Status.LastDrill.Passed {
			r.setDrillPassed(s, metav1.ConditionTrue, etcdv1beta2.ReasonDrillPassed, drillMessage(s.Status.LastDrill))
		} else {
			r.setDrillPassed(s, metav1.ConditionFalse, etcdv1beta2.ReasonDrillFailed, drillMessage(s.Status.LastDrill))
		}
	case len(d.active) > 0:
		r.setDrillPassed(s, metav1.ConditionUnknown, etcdv1beta2.ReasonRestoring, fmt.Sprintf("The first drill, %s, is running", d.active[0]))
	default:
		meta.RemoveStatusCondition(&s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed)
	}
	return d, r.applyDrillHistory(ctx, s, d)
}

// drillTime is the run a drill was created for (its annotation), or its creation time.
func drillTime(rs *etcdv1beta2.EtcdRestore) time.Time {
	if v, ok := rs.Annotations[ScheduledTimeAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	return rs.CreationTimestamp.Time
}

// recordDrill sets status.lastDrill from the finished drill rs, with a Normal or Warning event
// the first time it is recorded.
func (r *Reconciler) recordDrill(s *etcdv1beta2.EtcdBackupSchedule, rs *etcdv1beta2.EtcdRestore) {
	st := &rs.Status
	res := etcdv1beta2.DrillResultOf(rs)
	prev := s.Status.LastDrill
	s.Status.LastDrill = res
	if prev != nil && prev.Restore == res.Restore && prev.Passed == res.Passed {
		return
	}
	if res.Passed {
		r.Recorder.Event(s, "Normal", etcdv1beta2.ReasonDrillPassed, drillMessage(res))
		return
	}
	msg := drillMessage(res)
	if c := meta.FindStatusCondition(st.Conditions, etcdv1beta2.RestoreConditionFailed); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	r.Recorder.Event(s, "Warning", etcdv1beta2.ReasonDrillFailed, msg)
}

// drillMessage says what a drill showed, for the DrillPassed condition and events.
func drillMessage(d *etcdv1beta2.DrillResult) string {
	var rto, age string
	if d.TimeToRestore != nil {
		rto = d.TimeToRestore.Duration.String()
	}
	if d.BackupAge != nil {
		age = d.BackupAge.Duration.String()
	}
	if d.Passed {
		msg := fmt.Sprintf("Drill %s restored %s into a scratch cluster and verified %d keys on every member; time to restore %s, backup age %s",
			d.Restore, d.Backup, d.Keys, rto, age)
		if pt := d.PointInTime; pt != nil && d.RecoveryPointAge != nil {
			msg += fmt.Sprintf(", recovery point age %s (%d captured revisions replayed, to revision %d)", d.RecoveryPointAge.Duration, pt.Revisions, pt.Revision)
		}
		return msg
	}
	return fmt.Sprintf("Drill %s failed with reason %s (restoring %s; kubectl describe etcdrestore %s)", d.Restore, d.Reason, d.Backup, d.Restore)
}

// applyDrillHistory deletes the oldest finished drills beyond restoreDrill.historyLimit, once
// their scratch cluster is gone (status.clusterDeletedTime): deleting an EtcdRestore earlier
// would leave its scratch cluster behind, since the cluster is not owned by the EtcdRestore.
func (r *Reconciler) applyDrillHistory(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, d *drills) error {
	keep := int32(defaultDrillHistory)
	if s.Spec.RestoreDrill != nil && s.Spec.RestoreDrill.HistoryLimit != nil {
		keep = *s.Spec.RestoreDrill.HistoryLimit
	}
	var finished int32
	for i := range d.items {
		rs := &d.items[i]
		if !restoreFinished(rs) {
			continue
		}
		finished++
		if finished <= keep || rs.Status.ClusterDeletedTime == nil || rs.DeletionTimestamp != nil {
			continue
		}
		if err := r.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old drill EtcdRestore %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Deleted drill EtcdRestore beyond the history limit", "restore", rs.Name)
	}
	return nil
}

// withoutDrillBackups leaves out of children the EtcdBackups that active drills restore, so
// the backup history limits never delete a backup while a drill reads it.
func withoutDrillBackups(children []etcdv1beta2.EtcdBackup, d *drills) []etcdv1beta2.EtcdBackup {
	if len(d.backups) == 0 {
		return children
	}
	return slices.DeleteFunc(slices.Clone(children), func(b etcdv1beta2.EtcdBackup) bool { return d.backups[b.Name] })
}
