package etcdbackupschedule

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/kubename"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch;create;delete

// DrillLabel, on the EtcdRestores of restore drills, holds the name of the schedule that
// created them. Their scheduled time is in ScheduledTimeAnnotation, as on backups.
const DrillLabel = "etcd.database.coreos.com/drill-of"

// Defaults of RestoreDrillSpec, as the API defaults them.
const (
	defaultDrillTTL     = 600
	defaultDrillHistory = 3
)

// maxDrillName bounds the name of a drill's EtcdRestore, which is also the name of its scratch
// EtcdCluster: the cluster name becomes the Services <name> and <name>-client (DNS-1035 labels,
// at most 63 characters) and the member pods and their hostnames <name>-<n>.
const maxDrillName = 40

// DrillName is the deterministic name of the drill for the run at t, and of its scratch
// cluster: <schedule>-drill-<unix minutes of t>, a DNS-1035 label of at most 40 characters
// (a long or non-DNS-1035 schedule name is shortened and suffixed with a hash of it).
func DrillName(schedule string, t time.Time) string {
	return kubename.Fit(schedule, fmt.Sprintf("-drill-%d", t.Unix()/60), maxDrillName)
}

// drillTemplate is the EtcdCluster the scratch clusters copy: restoreDrill.clusterTemplate, or
// the cluster the backups are taken of.
func drillTemplate(s *etcdv1beta2.EtcdBackupSchedule) *etcdv1beta2.EtcdClusterRef {
	if t := s.Spec.RestoreDrill.ClusterTemplate; t != nil {
		return t
	}
	return s.Spec.BackupTemplate.Spec.EtcdCluster
}

// restoreFinished reports whether a drill's EtcdRestore succeeded or failed.
func restoreFinished(rs *etcdv1beta2.EtcdRestore) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete) ||
		meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
}

// drillIfDue plans the restore drills on restoreDrill.schedule (in the schedule's time zone)
// and creates the due drill's EtcdRestore of the newest successful backup: at most one drill in
// flight, at most one missed drill made up (a run that could not start, because a drill was in
// flight or no backup had succeeded yet, starts as soon as it can). It returns how long until
// the next drill (0: none planned).
func (r *Reconciler) drillIfDue(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, d *drills, now time.Time) (time.Duration, error) {
	log := ctrl.LoggerFrom(ctx)
	spec := s.Spec.RestoreDrill
	if spec == nil {
		s.Status.NextDrillTime = nil
		meta.RemoveStatusCondition(&s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed)
		return 0, nil
	}
	sched, err := Parse(spec.Schedule, s.Spec.TimeZone)
	if err != nil {
		r.drillInvalid(s, etcdv1beta2.ReasonInvalidSchedule, "restoreDrill.schedule: "+err.Error()+"; no drills run until it is fixed")
		return 0, nil
	}
	tmpl := drillTemplate(s)
	if tmpl == nil {
		r.drillInvalid(s, etcdv1beta2.ReasonTemplateNotFound, "restoreDrill.clusterTemplate is unset and backupTemplate.spec names no etcdCluster "+
			"(it uses etcdEndpoints): set restoreDrill.clusterTemplate to the EtcdCluster the scratch clusters copy; no drills run until then")
		return 0, nil
	}

	// Drills newly enabled (or re-enabled) start with the next run; otherwise runs count from
	// the last drill, the schedule's creation, or when it last became Scheduling.
	since := now
	if s.Status.NextDrillTime != nil {
		since = s.CreationTimestamp.Time
		if t := s.Status.LastDrillTime; t != nil && t.After(since) {
			since = t.Time
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionScheduling); c != nil && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	plan := sched.PlanAt(since, now, nil)
	s.Status.NextDrillTime = &metav1.Time{Time: plan.Next}
	wait := max(time.Second, plan.Next.Sub(now))
	switch {
	case plan.Run.IsZero():
		return wait, nil
	case len(d.active) > 0:
		// The Owns watch brings us back when it finishes; the run then starts late.
		log.V(1).Info("Skipping a drill while one is in flight", "active", d.active)
		return wait, nil
	case s.Status.LastSuccessfulBackup == "":
		// The Owns watch on EtcdBackups brings us back when one completes.
		log.V(1).Info("Drill due, waiting for a successful backup", "run", plan.Run)
		return wait, nil
	}
	backup := &etcdv1beta2.EtcdBackup{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Status.LastSuccessfulBackup}, backup); err != nil {
		if apierrors.IsNotFound(err) {
			log.V(1).Info("Drill due, but the newest successful EtcdBackup is gone", "backup", s.Status.LastSuccessfulBackup)
			return wait, nil
		}
		return 0, fmt.Errorf("getting EtcdBackup %s/%s: %w", s.Namespace, s.Status.LastSuccessfulBackup, err)
	}
	if backup.Status.Phase != etcdv1beta2.BackupPhaseCompleted {
		return wait, nil
	}
	if plan.Missed > 0 {
		log.Info("Making up only the most recent missed drill", "missed", plan.Missed, "run", plan.Run)
	}
	if err := r.createDrill(ctx, s, plan.Run, backup.Name, tmpl); err != nil {
		return 0, err
	}
	s.Status.LastDrillTime = &metav1.Time{Time: plan.Run}
	return wait, nil
}

// drillInvalid reports a restoreDrill that cannot run: DrillPassed False with reason, and a
// Warning event when the condition changes.
func (r *Reconciler) drillInvalid(s *etcdv1beta2.EtcdBackupSchedule, reason, msg string) {
	if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed); c == nil || c.Reason != reason || c.Message != msg {
		r.Recorder.Event(s, "Warning", reason, msg)
	}
	r.setDrillPassed(s, metav1.ConditionFalse, reason, msg)
	s.Status.NextDrillTime = nil
}

func (r *Reconciler) setDrillPassed(s *etcdv1beta2.EtcdBackupSchedule, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
		Type: etcdv1beta2.ScheduleConditionDrillPassed, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: s.Generation, LastTransitionTime: metav1.Time{Time: r.now()},
	})
}

// createDrill gets or creates the EtcdRestore of the drill run at t: backup restored into a new
// scratch cluster of the drill's name, copying tmpl, deleted ttlSecondsAfterFinished after the
// restore finished; with continuousCapture, the capture replayed onto it up to its newest
// revision. The schedule owns it, so deleting the schedule deletes its drills.
func (r *Reconciler) createDrill(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, t time.Time, backup string, tmpl *etcdv1beta2.EtcdClusterRef) error {
	name := DrillName(s.Name, t)
	err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, &etcdv1beta2.EtcdRestore{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting EtcdRestore %s/%s: %w", s.Namespace, name, err)
	}
	ttl := int32(defaultDrillTTL)
	if v := s.Spec.RestoreDrill.TTLSecondsAfterFinished; v != nil {
		ttl = *v
	}
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        name,
			Labels:      map[string]string{DrillLabel: s.Name},
			Annotations: map[string]string{ScheduledTimeAnnotation: t.UTC().Format(time.RFC3339)},
		},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:             etcdv1beta2.EtcdClusterRef{Name: name},
			ClusterTemplate:         tmpl.DeepCopy(),
			BackupRef:               &etcdv1beta2.LocalObjectReference{Name: backup},
			PointInTime:             s.DrillPoint(),
			TTLSecondsAfterFinished: &ttl,
		},
	}
	if err := controllerutil.SetControllerReference(s, rs, r.Scheme()); err != nil {
		return fmt.Errorf("setting owner of EtcdRestore %s/%s: %w", s.Namespace, name, err)
	}
	if err := r.Create(ctx, rs); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating drill EtcdRestore %s/%s: %w", s.Namespace, name, err)
	}
	what := "EtcdBackup " + backup
	if rs.Spec.PointInTime != nil {
		what += " and the newest point of its continuous capture"
	}
	r.Recorder.Eventf(s, "Normal", "DrillCreated", "Created EtcdRestore %s for the drill at %s: restoring %s into scratch EtcdCluster %s (template %s)",
		name, t.UTC().Format(time.RFC3339), what, name, tmpl.Name)
	return nil
}
