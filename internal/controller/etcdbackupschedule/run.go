package etcdbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// parse parses the schedule; an invalid one (that slipped past admission) sets
// Scheduling=False with InvalidSchedule or InvalidTimeZone and a Warning event.
func (r *Reconciler) parse(s *etcdv1beta2.EtcdBackupSchedule) (*Schedule, bool) {
	sched, err := Parse(s.Spec.Schedule, s.Spec.TimeZone)
	if err == nil {
		return sched, true
	}
	reason := etcdv1beta2.ReasonInvalidSchedule
	if errors.Is(err, ErrInvalidTimeZone) {
		reason = etcdv1beta2.ReasonInvalidTimeZone
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionScheduling); c == nil || c.Reason != reason || c.ObservedGeneration != s.Generation {
		r.Recorder.Event(s, "Warning", reason, err.Error())
	}
	r.setScheduling(s, false, reason, err.Error())
	s.Status.NextScheduleTime = nil
	s.Status.ObservedGeneration = s.Generation
	return nil, false
}

// since is the time after which runs count: the last scheduled run, the schedule's creation, or
// when the schedule last became Scheduling (runs missed while suspended or invalid are not made
// up).
func (r *Reconciler) since(s *etcdv1beta2.EtcdBackupSchedule, now time.Time) time.Time {
	since := s.CreationTimestamp.Time
	if t := s.Status.LastScheduleTime; t != nil && t.After(since) {
		since = t.Time
	}
	switch c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionScheduling); {
	case c == nil:
	case c.Status != metav1.ConditionTrue:
		since = now // becoming Ready in this pass
	case c.LastTransitionTime.After(since):
		since = c.LastTransitionTime.Time
	}
	return since
}

// runIfDue creates the EtcdBackup of the due run, if any, subject to concurrencyPolicy, and
// returns when to look again.
func (r *Reconciler) runIfDue(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, sched *Schedule, children []etcdv1beta2.EtcdBackup, now time.Time) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var deadline *time.Duration
	if d := s.Spec.StartingDeadlineSeconds; d != nil {
		dd := time.Duration(*d) * time.Second
		deadline = &dd
	}
	plan := sched.PlanAt(r.since(s, now), now, deadline)
	r.setScheduling(s, true, etcdv1beta2.ReasonAsExpected, fmt.Sprintf("Next backup at %s", plan.Next.UTC().Format(time.RFC3339)))
	s.Status.NextScheduleTime = &metav1.Time{Time: plan.Next}
	requeue := ctrl.Result{RequeueAfter: max(time.Second, plan.Next.Sub(now))}
	if plan.TooLate {
		log.V(1).Info("Missed a run by more than the starting deadline", "missed", plan.Missed)
	}
	if plan.Run.IsZero() {
		return requeue, nil
	}
	if plan.Missed > 0 {
		log.Info("Making up only the most recent missed run", "missed", plan.Missed, "run", plan.Run)
	}

	switch s.Spec.ConcurrencyPolicy {
	case etcdv1beta2.AllowConcurrent:
	case etcdv1beta2.ReplaceConcurrent:
		for i := range children {
			b := &children[i]
			// Never the due run's own backup: a pass that reads a stale status plans the same
			// run again and must not replace what the previous pass started.
			if b.IsFinished() || b.Name == BackupName(s.Name, plan.Run) {
				continue
			}
			if err := r.Delete(ctx, b, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("replacing running EtcdBackup %s/%s: %w", b.Namespace, b.Name, err)
			}
			r.Recorder.Eventf(s, "Normal", "BackupReplaced", "Deleted running backup %s for the run at %s", b.Name, plan.Run.UTC().Format(time.RFC3339))
		}
		s.Status.Active = slices.DeleteFunc(s.Status.Active, func(n string) bool { return n != BackupName(s.Name, plan.Run) })
	default: // Forbid
		if len(s.Status.Active) > 0 {
			// The Owns watch brings us back when the running backup finishes; the run then
			// starts late if its starting deadline allows.
			log.V(1).Info("Skipping run while a backup is active", "active", s.Status.Active)
			return requeue, nil
		}
	}

	b, err := r.createBackup(ctx, s, plan.Run)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.Status.LastScheduleTime = &metav1.Time{Time: plan.Run}
	if !b.IsFinished() && !slices.Contains(s.Status.Active, b.Name) {
		s.Status.Active = append(s.Status.Active, b.Name)
	}
	return requeue, nil
}

// BackupName is the deterministic name of the backup for the run at t: <schedule>-<UTC
// yyyymmddhhmm>, so a retried pass finds the backup it already created.
func BackupName(schedule string, t time.Time) string {
	return fmt.Sprintf("%s-%s", schedule, t.UTC().Format("200601021504"))
}

// createBackup gets or creates the EtcdBackup of the run at t.
func (r *Reconciler) createBackup(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, t time.Time) (*etcdv1beta2.EtcdBackup, error) {
	name := BackupName(s.Name, t)
	b := &etcdv1beta2.EtcdBackup{}
	err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, b)
	if err == nil {
		return b, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting EtcdBackup %s/%s: %w", s.Namespace, name, err)
	}
	tmpl := &s.Spec.BackupTemplate
	b = &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        name,
			Labels:      maps.Clone(tmpl.Metadata.Labels),
			Annotations: maps.Clone(tmpl.Metadata.Annotations),
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Labels[ScheduleLabel] = s.Name
	b.Annotations[ScheduledTimeAnnotation] = t.UTC().Format(time.RFC3339)
	b.Spec.PathType = etcdv1beta2.BackupPathPrefix
	if err := controllerutil.SetControllerReference(s, b, r.Scheme()); err != nil {
		return nil, fmt.Errorf("setting owner of EtcdBackup %s/%s: %w", s.Namespace, name, err)
	}
	if err := r.Create(ctx, b); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return b, nil
		}
		return nil, fmt.Errorf("creating EtcdBackup %s/%s: %w", s.Namespace, name, err)
	}
	r.Recorder.Eventf(s, "Normal", "BackupCreated", "Created EtcdBackup %s for the run at %s", name, t.UTC().Format(time.RFC3339))
	return b, nil
}
