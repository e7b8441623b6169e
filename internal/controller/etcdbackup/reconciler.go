// Package etcdbackup holds the controller of EtcdBackup: one-shot and periodic (coreos
// backupPolicy.backupIntervalInSecond) verified backups of an etcd cluster into an object store.
package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Retry policy of one-shot backups.
const (
	// MaxAttempts is how many times a one-shot backup is tried when it fails transiently.
	MaxAttempts = 3
	// DefaultRetryBackoff is the wait after the first failed attempt; it doubles each time.
	DefaultRetryBackoff = 30 * time.Second
)

// Reconciler reconciles EtcdBackup objects.
type Reconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  *options.Options
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// RetryBackoff is the wait after a transient failure of a one-shot backup; 0 means
	// DefaultRetryBackoff.
	RetryBackoff time.Duration

	// retention deletes old backups and remembers whom it told about legacy objects.
	retention storage.Retention
}

// Setup registers the EtcdBackup controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers r with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackup{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the EtcdBackup controller: %w", err)
	}
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile takes one backup when one is due:
//  1. Get the EtcdBackup; gone -> done.
//  2. A finished one-shot backup (Completed or Failed) is a record: return at once, never redo.
//  3. Not due yet (periodic interval, or retry backoff of a one-shot) -> RequeueAfter the rest.
//  4. Otherwise resolve endpoints and TLS, open the store (a one-shot backup to an exact path
//     first claims the path in one pass and uploads in the next: see claimExactPath), stream a
//     verified snapshot into it, apply maxBackups retention to this cluster's backups
//     (periodic), and record the outcome in status with one deferred merge patch; periodic
//     backups requeue after their interval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	obj := &etcdv1beta2.EtcdBackup{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdBackup %s: %w", req.NamespacedName, err)
	}
	periodic := obj.Spec.IsPeriodic()
	if !periodic && obj.IsFinished() {
		return ctrl.Result{}, nil
	}
	now := r.now()
	if wait := r.untilDue(obj, now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	base := obj.DeepCopy()
	defer func() {
		if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patching status of EtcdBackup %s: %w", req.NamespacedName, err))
		}
	}()

	obj.Status.StartTime = &metav1.Time{Time: now}
	res, err := r.backup(ctx, obj)
	switch {
	case errors.Is(err, errClaimed):
		return ctrl.Result{}, nil // the status patch (our own watch) starts the upload pass
	case err != nil:
		return r.recordFailure(obj, err, now)
	}
	r.recordSuccess(obj, res)
	if periodic {
		return ctrl.Result{RequeueAfter: r.untilDue(obj, r.now())}, nil
	}
	return ctrl.Result{}, nil
}

// untilDue returns how long until the next attempt is due, or 0 when it is due now. Stateless:
// it reads only the status of the previous attempt.
func (r *Reconciler) untilDue(obj *etcdv1beta2.EtcdBackup, now time.Time) time.Duration {
	st := &obj.Status
	var due time.Time
	switch {
	case obj.Spec.IsPeriodic():
		if st.StartTime == nil {
			return 0
		}
		due = st.StartTime.Add(time.Duration(obj.Spec.BackupPolicy.BackupIntervalInSecond) * time.Second)
	case st.Attempts > 0 && st.CompletionTime != nil:
		due = st.CompletionTime.Add(r.backoff(st.Attempts))
	default:
		return 0
	}
	return max(0, due.Sub(now))
}

// backoff is the wait after the given number of failed attempts.
func (r *Reconciler) backoff(attempts int32) time.Duration {
	d := r.RetryBackoff
	if d <= 0 {
		d = DefaultRetryBackoff
	}
	return d << max(0, attempts-1)
}
