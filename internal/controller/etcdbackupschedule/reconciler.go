// Package etcdbackupschedule holds the controller of EtcdBackupSchedule: it creates one
// EtcdBackup per cron run (like CronJob creates Jobs), keeps a bounded history of them, and
// applies retention to the backup objects in the bucket.
package etcdbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Labels and annotations on the EtcdBackups a schedule creates.
const (
	// ScheduleLabel holds the name of the schedule that created a backup.
	ScheduleLabel = "etcd.database.coreos.com/backup-schedule"
	// ScheduledTimeAnnotation holds the run's scheduled time (RFC 3339, UTC).
	ScheduledTimeAnnotation = "etcd.database.coreos.com/scheduled-time"
)

// FreshnessGrace is added to the schedule's interval (and starting deadline) before the newest
// successful backup counts as stale: it covers the backup's own duration.
const FreshnessGrace = 15 * time.Minute

// Reconciler reconciles EtcdBackupSchedule objects.
type Reconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  *options.Options
	// retention deletes old backups and remembers whom it told about legacy objects.
	retention storage.Retention
	// captures runs the continuous captures (spec.continuousCapture); set by SetupWithManager.
	captures *captures
	// Now returns the current time; nil means time.Now. The controller reads it once per
	// pass; tests move a fake clock and never sleep.
	Now func() time.Time
}

// Setup registers the EtcdBackupSchedule controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers r with the manager; it watches the EtcdBackups and the drill
// EtcdRestores it owns, and the state changes of the continuous captures it runs (a
// leader-elected Runnable added to the manager).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.captures = newCaptures(mgr.GetClient(), mgr.GetAPIReader(), r.Options)
	if err := mgr.Add(r.captures); err != nil {
		return fmt.Errorf("adding the continuous captures: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackupSchedule{}).
		Owns(&etcdv1beta2.EtcdBackup{}).
		Owns(&etcdv1beta2.EtcdRestore{}).
		WatchesRawSource(source.Channel(r.captures.events, &handler.TypedEnqueueRequestForObject[*etcdv1beta2.EtcdBackupSchedule]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the EtcdBackupSchedule controller: %w", err)
	}
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile runs one pass of a schedule:
//  1. Get the schedule; gone -> done (its EtcdBackups go with it through owner references).
//  2. Observe its EtcdBackups: active ones, the newest success; observe its drill EtcdRestores:
//     the newest finished one becomes status.lastDrill and DrillPassed (drill.go); apply the
//     history limits (never to a backup a running drill restores) and, after a new success,
//     retention of the objects in the bucket.
//  3. Parse schedule and time zone; invalid -> Scheduling=False with the reason, Warning event,
//     no requeue (an edit triggers the next pass).
//  4. Suspended -> Scheduling=False Suspended, no runs.
//  5. Plan at the clock's now from lastScheduleTime: create the due run's EtcdBackup (one
//     deterministic name per run, so retries never duplicate) subject to concurrencyPolicy.
//  6. With continuousCapture: run the capture (capture.go; stopped while not Scheduling),
//     record where it stands, and start a full backup when it has none to continue.
//  7. The same for restoreDrill: create the due drill's EtcdRestore, one at a time.
//  8. Ready (with Stalled) from Scheduling, the newest finished backup and DrillPassed; one
//     deferred status patch; RequeueAfter until the next run or drill (or until the newest
//     backup turns stale, if sooner).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.captures.stop(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdBackupSchedule %s: %w", req.NamespacedName, err)
	}
	base := s.DeepCopy()
	defer func() {
		if err := r.Status().Patch(ctx, s, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patching status of EtcdBackupSchedule %s: %w", req.NamespacedName, err))
		}
	}()
	now := r.now()

	children, err := r.observeChildren(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer r.setReady(s, children) // before the status patch: deferred calls run last first
	drills, err := r.observeDrills(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.applyHistoryLimits(ctx, s, withoutDrillBackups(children, drills)); err != nil {
		return ctrl.Result{}, err
	}
	r.applyRetention(ctx, s, base.Status.LastSuccessfulBackup, now)

	sched, ok := r.parse(s)
	if !ok {
		s.Status.NextDrillTime = nil
		_, err := r.reconcileCapture(ctx, s, false, base.Status.LastSuccessfulBackup, now)
		return ctrl.Result{}, err
	}
	if s.Spec.Suspend != nil && *s.Spec.Suspend {
		r.setScheduling(s, false, etcdv1beta2.ReasonScheduleSuspended, "spec.suspend is true: no backups, restore drills or captures are started")
		s.Status.NextScheduleTime, s.Status.NextDrillTime = nil, nil
		r.setFreshness(s, sched, now)
		s.Status.ObservedGeneration = s.Generation
		_, err := r.reconcileCapture(ctx, s, false, base.Status.LastSuccessfulBackup, now)
		return ctrl.Result{}, err
	}
	result, err := r.runIfDue(ctx, s, sched, children, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if next, err := r.reconcileCapture(ctx, s, true, base.Status.LastSuccessfulBackup, now); err != nil {
		return ctrl.Result{}, err
	} else if next > 0 && next < result.RequeueAfter {
		result.RequeueAfter = next
	}
	if next, err := r.drillIfDue(ctx, s, drills, now); err != nil {
		return ctrl.Result{}, err
	} else if next > 0 && next < result.RequeueAfter {
		result.RequeueAfter = next
	}
	if left := r.setFreshness(s, sched, now); left > 0 && left < result.RequeueAfter {
		result.RequeueAfter = left + time.Second // observe the moment it turns stale
	}
	s.Status.ObservedGeneration = s.Generation
	return result, nil
}
