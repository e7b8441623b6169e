// Package etcdbackup holds the controller of EtcdBackup: one-shot and periodic (coreos
// backupPolicy.backupIntervalInSecond) verified backups of an etcd cluster into an object store.
package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=services;pods,verbs=get;list
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list

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

	// APIReader reads an EtcdBackup around the cache before a backup starts (SetupWithManager
	// sets it).
	APIReader client.Reader
	// Pool runs the backups outside the reconcile workers; nil: SetupWithManager makes one
	// from the options.
	Pool *workpool.Pool

	// retention deletes old backups and remembers whom it told about legacy objects.
	retention storage.Retention
}

// Setup registers the EtcdBackup controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers r and its worker pool with the manager; a backup that finishes
// in the pool triggers a pass, which records it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Pool == nil {
		r.Pool = workpool.New("backup", r.Options.MaxConcurrentBackups, r.Options.MaxConcurrentBackupsPerNamespace,
			func() client.Object { return &etcdv1beta2.EtcdBackup{} })
	}
	if err := mgr.Add(r.Pool); err != nil {
		return fmt.Errorf("adding the backup worker pool: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdBackup{}).
		WatchesRawSource(source.Channel(r.Pool.Events(), &handler.EnqueueRequestForObject{})).
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
//  1. Get the EtcdBackup; gone -> cancel its backup in the pool, done.
//  2. A backup that finished in the worker pool (see internal/workpool) is recorded in status.
//  3. A backup queued or running in the pool: nothing to do; the pool's event brings the next pass.
//  4. A finished one-shot backup (Completed or Failed) is a record: return at once, never redo.
//  5. Not due yet (periodic interval, or retry backoff of a one-shot) -> RequeueAfter the rest.
//  6. Otherwise queue the backup in the pool (Running): resolve endpoints and TLS, open the
//     store (a one-shot backup to an exact path first claims the path in one run and uploads
//     in the next: see claimExactPath), stream a verified snapshot into it, and apply
//     maxBackups retention to this cluster's backups (periodic).
//
// Each pass ends with one deferred merge patch of the status; periodic backups requeue after
// their interval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	obj := &etcdv1beta2.EtcdBackup{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Pool.Cancel(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdBackup %s: %w", req.NamespacedName, err)
	}
	base := obj.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(base.Status, obj.Status) {
			return
		}
		if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patching status of EtcdBackup %s: %w", req.NamespacedName, err))
		}
	}()

	switch done, pending := r.Pool.Take(req.NamespacedName, string(obj.UID)); {
	case pending:
		return ctrl.Result{}, nil // the pool's event brings the next pass
	case done != nil:
		return r.record(obj, done)
	}
	if wait, err := r.due(ctx, obj); wait != 0 || err != nil {
		return ctrl.Result{RequeueAfter: max(0, wait)}, err
	}
	base = obj.DeepCopy() // due may have read obj live
	now := r.now()
	snap := obj.DeepCopy()
	r.Pool.Submit(req.NamespacedName, string(obj.UID), func(ctx context.Context) (any, error) { return r.backup(ctx, snap) })
	obj.Status.StartTime = &metav1.Time{Time: now}
	obj.Status.Phase = etcdv1beta2.BackupPhaseRunning
	return ctrl.Result{}, nil
}

// record writes the outcome of a backup that ran in the pool into status.
func (r *Reconciler) record(obj *etcdv1beta2.EtcdBackup, done *workpool.Outcome) (ctrl.Result, error) {
	if c, ok := errors.AsType[*claimedError](done.Err); ok {
		// The status patch (our own watch) starts the upload run.
		obj.Status.Location = c.location
		return ctrl.Result{}, nil
	}
	if done.Err != nil {
		return r.recordFailure(obj, done.Err, r.now())
	}
	r.recordSuccess(obj, done.Value.(*outcome))
	if obj.Spec.IsPeriodic() {
		return ctrl.Result{RequeueAfter: r.untilDue(obj, r.now())}, nil
	}
	return ctrl.Result{}, nil
}

// due returns 0 when a backup of obj is to start now, -1 when none is (a finished one-shot
// backup), or how long until the next one is due. A backup that looks due in the cache is
// checked against the object read live, so that a pass on a copy that missed this
// controller's own last status patch never starts a backup again that just finished; obj is
// then that live copy.
func (r *Reconciler) due(ctx context.Context, obj *etcdv1beta2.EtcdBackup) (time.Duration, error) {
	for _, read := range []bool{false, true} {
		if read {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return 0, fmt.Errorf("reading EtcdBackup %s: %w", klog.KObj(obj), err)
			}
		}
		if !obj.Spec.IsPeriodic() && obj.IsFinished() {
			return -1, nil
		}
		if wait := r.untilDue(obj, r.now()); wait > 0 {
			return wait, nil
		}
	}
	return 0, nil
}

// untilDue returns how long until the next attempt is due, or 0 when it is due now. Stateless:
// it reads only the status of the previous attempt.
func (r *Reconciler) untilDue(obj *etcdv1beta2.EtcdBackup, now time.Time) time.Duration {
	st := &obj.Status
	var due time.Time
	switch {
	case st.Phase == etcdv1beta2.BackupPhaseRunning:
		// Running, but the pool holds no run of it (Reconcile asks the pool first): the run
		// was lost with an operator restart or a change of leader. Run it again now.
		return 0
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
