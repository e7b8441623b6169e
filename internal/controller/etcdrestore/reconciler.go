// Package etcdrestore holds the controller of EtcdRestore, the front door of a restore: it
// resolves and verifies the backup, takes the one-restore-per-cluster lock, preflights, replaces
// or creates the target EtcdCluster with bootstrap.restore.source set to the verified backup,
// waits while the etcd operator builds and verifies every member from it (Restored), and reports
// success only once every member of the Available cluster holds the backup's keyspace. It
// creates and deletes no member pod or volume.
package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups;etcdbackupschedules,verbs=get;list;watch
// No pod or volume is written: the check runs as a Job (batch, create and delete; its pod,
// made by the Job controller, is read for its result, and the Job's events for a pod the API
// server refused). The etcd operator alone creates, retains, changes and deletes members' pods
// and volumes, also for a restore.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// LabelRestore is set on a restore's check Job and its pod: the name of the EtcdRestore.
const LabelRestore = "etcd.database.coreos.com/restore"

// Requeue intervals for what no watch reports.
const (
	requeueStep    = 2 * time.Second  // right after a change this pass made
	requeueWait    = 5 * time.Second  // a pod starting, old pods terminating, a cluster growing
	requeueBackoff = 30 * time.Second // a store or API error worth retrying
	requeueLocked  = 10 * time.Second // another EtcdRestore of the same cluster goes first
	// requeueNow continues with the next phase at once, after this pass's status patch. (A
	// RequeueAfter rather than Requeue: true, which would go through the rate limiter's backoff.)
	requeueNow = time.Millisecond
)

// restoreTimeoutBase is the part of a restore's deadline that does not depend on the backup's
// size: pods starting, the cluster growing to size, members verified.
const restoreTimeoutBase = 20 * time.Minute

// Reconciler reconciles EtcdRestore objects.
type Reconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  *options.Options
	// AgentImage is the image with the restore-operator binary, run as the seed's first init
	// container; Setup finds it (--seed-agent-image, else the operator's own pod).
	AgentImage string
	// Check reads one member's keyspace figures; tests may replace it.
	Check restoreboot.MemberCheck
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// StuckAfter is how long past its deletion deadline a pod of a replaced cluster counts as
	// stuck Terminating; 0 is restoreboot.StuckAfter.
	StuckAfter time.Duration
	// APIReader reads the EtcdRestore itself around the cache (SetupWithManager sets it).
	APIReader client.Reader
	// Pool reads backups whole (verifyBackup) outside the reconcile workers; nil:
	// SetupWithManager makes one from the options.
	Pool *workpool.Pool
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Setup registers the EtcdRestore controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	image, err := restoreboot.AgentImage(context.Background(), mgr.GetAPIReader(), opts)
	if err != nil {
		// Restores will fail with a condition that says this; the other kinds still work.
		ctrl.Log.Error(err, "No image for the restore seed agent: restores cannot seed members")
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts, AgentImage: image, Check: restoreboot.CheckMember}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers r with the manager: EtcdRestores, their check Jobs and the Jobs' pods (by label), the
// volumes retained for them (by annotation) and the clusters (by their restore bootstrap, and
// by name: an old cluster going away) trigger passes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Pool == nil {
		r.Pool = workpool.New("verify", r.Options.MaxConcurrentBackups, r.Options.MaxConcurrentBackupsPerNamespace,
			func() client.Object { return &etcdv1beta2.EtcdRestore{} })
	}
	if err := mgr.Add(r.Pool); err != nil {
		return fmt.Errorf("adding the backup check worker pool: %w", err)
	}
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetLabels()[LabelRestore]; name != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	})
	byRetained := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetAnnotations()[etcdv1beta2.AnnotationRetainedBy]; name != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	})
	byCluster := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.restoresOf(ctx, o)
	})
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdRestore{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, byLabel).
		// The etcd operator retaining or releasing a volume for a restore moves it on.
		Watches(&corev1.PersistentVolumeClaim{}, byRetained).
		Watches(&etcdv1beta2.EtcdCluster{}, byCluster).
		WatchesRawSource(crsource.Channel(r.Pool.Events(), &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the EtcdRestore controller: %w", err)
	}
	return nil
}

// restoresOf maps an EtcdCluster event to the EtcdRestore its restore bootstrap names and to
// the unfinished EtcdRestores of its name (an in-place restore waits for the old cluster to be
// deleted: its deletion is what lets it go on, with no requeue delay).
func (r *Reconciler) restoresOf(ctx context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*etcdv1beta2.EtcdCluster)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	if c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil && c.Spec.Bootstrap.Restore.RestoreName != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.Bootstrap.Restore.RestoreName}})
	}
	list := &etcdv1beta2.EtcdRestoreList{}
	if err := r.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing EtcdRestores for a cluster event", "cluster", klog.KObj(c))
		return reqs
	}
	for i := range list.Items {
		if rs := &list.Items[i]; rs.Spec.EtcdCluster.Name == c.Name && !finished(rs) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)})
		}
	}
	return reqs
}

// Reconcile moves one EtcdRestore one step further: verify the backup (in the worker pool), make the cluster, seed
// it, wait for it to grow, verify it; or, once finished, delete a drill's scratch cluster when
// its TTL ran out. Each pass ends with one status patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read live, not from the cache: a pass on a stale copy that missed the last status patch
	// would repeat a step that is done (re-create a failed restore's deleted seed pod).
	rs := &etcdv1beta2.EtcdRestore{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.Pool.Cancel(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdRestore %s: %w", req.NamespacedName, err)
	}
	if rs.DeletionTimestamp != nil || finished(rs) {
		r.Pool.Cancel(req.NamespacedName) // a check still queued or running is of no use now
	}
	if rs.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	before := rs.DeepCopy()
	res, err := r.step(ctx, rs)
	rs.Status.ObservedGeneration = rs.Generation
	if !equalStatus(before, rs) {
		if perr := r.Status().Patch(ctx, rs, client.MergeFrom(before)); perr != nil {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("patching status of EtcdRestore %s: %w", klog.KObj(rs), perr))
		}
	}
	return res, err
}

// step does the one thing rs needs next and says when to look again.
func (r *Reconciler) step(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	if finished(rs) {
		return r.finished(ctx, rs)
	}
	holder, err := r.lockHolder(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if holder != nil {
		r.wait(rs, holder.Name)
		return ctrl.Result{RequeueAfter: requeueLocked}, nil
	}
	if rs.Status.StartTime == nil {
		now := metav1.NewTime(r.now())
		rs.Status.StartTime = &now
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, "checking the backup before touching any cluster")
		r.Recorder.Eventf(rs, corev1.EventTypeNormal, "Started", "Restoring into EtcdCluster %s", rs.Spec.EtcdCluster.Name)
		return ctrl.Result{RequeueAfter: requeueNow}, nil
	}
	if deadline := rs.Status.StartTime.Add(restoreTimeout(rs.Status.BackupSize)); r.now().After(deadline) {
		// The restore's own check pod stops; the cluster and its members are the etcd
		// operator's, left as they are (formed, they may hold writes).
		if err := r.stopCheck(ctx, rs); err != nil {
			return ctrl.Result{}, err
		}
		r.fail(rs, etcdv1beta2.ReasonTimeout, fmt.Sprintf("the restore did not complete within %s (%s)", restoreTimeout(rs.Status.BackupSize), describeProgress(rs))+r.leftAlone(ctx, rs)+r.leftBehind(ctx, rs))
		return ctrl.Result{}, nil
	}

	var res ctrl.Result
	switch {
	case !isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupVerified):
		res, err = r.verifyBackup(ctx, rs)
	case needsCheck(rs) && !checkDone(rs):
		res, err = r.checkRestorable(ctx, rs)
	case !isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionSeeded):
		res, err = r.seed(ctx, rs)
	default:
		res, err = r.complete(ctx, rs)
	}
	return r.outcome(ctx, rs, res, err)
}

// outcome turns what a step returned into status and a requeue: a wait, a lock, a terminal or a
// transient failure.
func (r *Reconciler) outcome(ctx context.Context, rs *etcdv1beta2.EtcdRestore, res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return res, nil
	}
	if w, ok := errors.AsType[errWait](err); ok {
		r.progress(rs, rs.Status.Phase, w.msg)
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if l, ok := errors.AsType[errLocked](err); ok {
		r.wait(rs, l.holder)
		return ctrl.Result{RequeueAfter: requeueLocked}, nil
	}
	if re, ok := errors.AsType[*reason.Error](err); ok {
		if !re.Transient {
			r.fail(rs, re.Reason, re.Error()+r.leftBehind(ctx, rs))
			return ctrl.Result{}, nil
		}
		ctrl.LoggerFrom(ctx).Info("Retrying after a transient failure", "reason", re.Reason, "error", re.Error())
		r.progress(rs, rs.Status.Phase, "retrying: "+re.Error())
		r.Recorder.Event(rs, corev1.EventTypeWarning, re.Reason, re.Error())
		return ctrl.Result{RequeueAfter: requeueBackoff}, nil
	}
	return ctrl.Result{}, err
}

// restoreTimeout bounds a whole restore: long enough to move and restore a multi-GiB backup
// twice over a slow store, and for the cluster to grow.
func restoreTimeout(size int64) time.Duration {
	return restoreTimeoutBase + 2*snapshot.DefaultTimeout(size)
}

func describeProgress(rs *etcdv1beta2.EtcdRestore) string {
	if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete); c != nil {
		return "last step: " + c.Message
	}
	return "phase " + string(rs.Status.Phase)
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func equalStatus(a, b *etcdv1beta2.EtcdRestore) bool {
	return equality.Semantic.DeepEqual(a.Status, b.Status)
}

// leftAlone says, for a restore that gives up, that the cluster it made formed and is left as
// it is: its members are the etcd operator's, and a formed cluster may already hold writes.
func (r *Reconciler) leftAlone(ctx context.Context, rs *etcdv1beta2.EtcdRestore) string {
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c); err != nil || !ours(c, rs) || c.Status.ClusterID == "" {
		return ""
	}
	return fmt.Sprintf(". EtcdCluster %s formed on the restored data and may serve writes: it is left running as it is, unverified against the backup", c.Name)
}
