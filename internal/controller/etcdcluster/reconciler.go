// Package etcdcluster holds the controller of EtcdCluster: it runs etcd member pods behind a
// headless peer Service and a client Service, grows and shrinks the membership one member at a
// time through the etcd membership API, replaces dead members while the cluster has quorum,
// and upgrades members one at a time. The decisions are made by pkg/cluster.Next from what
// each pass observes; this package observes Kubernetes and etcd and carries the steps out.
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/etcd-operator/etcd-operator/internal/alarmpoll"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch

// Reconciler reconciles EtcdCluster objects.
type Reconciler struct {
	client.Client
	Recorder record.EventRecorder
	Options  *options.Options
	// NewEtcdClient connects to a cluster's members; cluster.New unless a test replaces it.
	NewEtcdClient ClientFactory
	// Failpoint is called at the named failpoints; see failpoint.go.
	Failpoint func(name string)
	// APIReader reads around the cache where a stale object would do harm.
	APIReader client.Reader
	// Clock tells when a terminating pod counts as stuck; the real clock unless a test sets it.
	Clock clock.PassiveClock
	// AlarmProbe asks a member's metrics listener for etcd's alarms (internal/alarmpoll); an
	// HTTP GET of /health unless a test replaces it.
	AlarmProbe alarmpoll.Probe
	// AgentImage is the image with the restore agent (the restore-operator binary) that the
	// members restored from bootstrap.restore.source run first; Setup finds it
	// (--seed-agent-image, else the operator's own pod).
	AgentImage string
	// RestoreCheck reads one member's keyspace figures to verify a restore;
	// restoreboot.CheckMember unless a test replaces it.
	RestoreCheck restoreboot.MemberCheck
	// Pool reads the backups a restore from a prefix chooses among (restore_select.go)
	// outside the reconcile workers; nil: SetupWithManager makes one from the options.
	Pool *workpool.Pool
	// StuckAfter is how long past its deletion deadline a pod of a cluster replaced in place
	// counts as stuck Terminating; 0: restoreboot.StuckAfter.
	StuckAfter time.Duration
	// SelectRetry is how long a failed choice of a restore's backup waits before the next
	// attempt; 0: a minute.
	SelectRetry time.Duration

	// warned remembers the last Warning reason per cluster UID and condition type, so that a
	// pass that reads a status from the cache that does not show the previous pass's patch yet
	// does not warn about the same flip again.
	warned sync.Map
	// defragmented remembers when this process defragmented each member (key: cluster UID and
	// member ID in hex), next to status.members.details, which a pass that read a cluster
	// from a cache that had not seen the last status patch yet would set back.
	defragmented sync.Map
	// defragRequests remembers, per cluster UID, the requested defragmentation round this
	// process last wrote to status (defrag_request.go), for the same reason.
	defragRequests sync.Map
	// revisions samples, per cluster with Periodic auto-compaction set, the revision its
	// members answered at over time (revision_log.go): NOSPACE keeps that retention.
	revisions revisionLog
	// dataLostSince remembers, per cluster UID, since when the cluster has been formed,
	// unreachable and without any pod (spec.recovery's clock).
	dataLostSince sync.Map
	// passes holds the cancel function of the pass under way for each cluster UID
	// (abandon.go), so that a pass of a cluster being deleted or replaced stops at once.
	passes sync.Map
}

// Setup registers the EtcdCluster controller with the manager.
func Setup(mgr ctrl.Manager, opts *options.Options) error {
	image, err := restoreboot.AgentImage(context.Background(), mgr.GetAPIReader(), opts)
	if err != nil {
		// Clusters restored from bootstrap.restore.source say so; everything else works.
		ctrl.Log.Error(err, "No image for the restore agent: clusters cannot be built from bootstrap.restore.source")
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts, AgentImage: image}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers r, filling in the defaults of unset fields.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NewEtcdClient == nil {
		r.NewEtcdClient = cluster.New
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Failpoint == nil {
		r.Failpoint = envFailpoint()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.AlarmProbe == nil {
		r.AlarmProbe = alarmpoll.HTTPProbe
	}
	// An etcd alarm changes no watched object: the poller wakes the cluster's pass.
	alarms := alarmpoll.New(mgr.GetClient(), r.AlarmProbe)
	if err := mgr.Add(alarms); err != nil {
		return fmt.Errorf("adding the etcd alarm poller: %w", err)
	}
	if r.Pool == nil {
		r.Pool = workpool.New("select", r.Options.MaxConcurrentBackups, r.Options.MaxConcurrentBackupsPerNamespace,
			func() client.Object { return &etcdv1beta2.EtcdCluster{} })
	}
	if err := mgr.Add(r.Pool); err != nil {
		return fmt.Errorf("adding the backup selection worker pool: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&etcdv1beta2.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		WatchesRawSource(source.Channel(alarms.Events(), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(r.Pool.Events(), &handler.EnqueueRequestForObject{})).
		Watches(&etcdv1beta2.EtcdCluster{}, r.abandonOnLeave()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the EtcdCluster controller: %w", err)
	}
	return nil
}

// Reconcile moves one EtcdCluster at most one member step toward its spec:
//  1. Get the cluster; gone -> drop its metrics, done. Being deleted -> done (owner references
//     let the garbage collector delete pods, volumes, Services and the PodDisruptionBudget),
//     after stopping the member pods at once when an in-place restore replaces it. Marked
//     for an in-place restore: its side of that (holdReplaced), which may end the pass.
//  2. Defer the single status patch; observedGeneration only when the pass succeeded, Ready
//     (with Reconciling or Stalled) from what the pass wrote. Accept (or refuse) a
//     defragmentation round requested by annotation; the upkeep in step 6 runs it.
//  3. Unless paused: ensure the headless peer Service and the client Service (a foreign one
//     in the way stops the pass: NotOwned), the TLS.auto CA and certificates (made, or issued
//     again inside their renewal window; a problem with them stops the pass of a cluster not
//     yet formed, and otherwise holds back only the steps that start a pod), the PodDisruptionBudget, and sole ownership of the
//     members (legacy restore seeds adopted, EtcdRestore owner references removed; a change
//     ends the pass).
//  4. Observe: the cluster's own member pods and volumes (foreign names reserved), etcd's
//     member list and each member's status (one etcd client with the cluster's certificate and
//     credentials, closed at the end of the pass; refused credentials stop it: AuthFailed).
//  5. Record the observed status; spec.paused -> condition Paused, change nothing.
//  6. Decide the target version (unsupported paths are refused with a condition), let
//     cluster.Next pick the single next step (held back unless the member list is
//     linearizable and of the recorded cluster), carry it out; when membership needs nothing,
//     the upkeep: spec.auth turned on, member volumes grown, the storage's maintenance.
//  7. Set conditions, phase, events (a Warning when a refusal starts) and metrics; requeue
//     shortly after a change, later while waiting on etcd.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Namespace, req.Name)
			r.revisions.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdCluster %s: %w", req.NamespacedName, err)
	}
	ctx, done := r.startPass(ctx, c)
	defer done()
	if c.DeletionTimestamp != nil {
		// The garbage collector deletes what c owns; a restore replacing c wants its volumes
		// kept and its members stopped at once.
		wait, err := r.stopReplaced(ctx, c)
		return ctrl.Result{RequeueAfter: wait}, err
	}
	// An in-place restore is about to delete c: its volumes are kept for that restore first
	// (it waits for that), then its members on volumes are stopped and it is held until it is
	// deleted; a restore gone or failed before that gives c its volumes back.
	if held, wait, err := r.holdReplaced(ctx, c); err != nil || held {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	before := c.DeepCopy()
	defer func() {
		if retErr == nil {
			c.Status.ObservedGeneration = c.Generation
		}
		r.settleDefragmentRequest(c)
		setReady(c)
		recordMetrics(c)
		if err := r.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil && retErr == nil {
			retErr = fmt.Errorf("patching status of %s: %w", klog.KObj(c), err)
		}
	}()
	// A defragmentation requested by annotation: accepted (or refused) before anything else.
	r.acceptDefragmentRequest(c)

	// A cluster that coreos/etcd-operator runs is left exactly as it is, unless the user asked
	// for its takeover and it can be taken over.
	if err := r.holdCoreosCluster(ctx, c); err != nil {
		return r.stop(before, c, err)
	}
	// The Services first: the members' DNS names, which observe dials, exist only with the
	// headless Service (a restored cluster's seed runs before its first pass).
	var pdbErr, tlsErr error
	var tlsWait time.Duration // a CA rotation under way looks again this soon
	if !c.Spec.Paused {
		if err := r.reconcileServices(ctx, c); err != nil {
			return r.stop(before, c, err)
		}
		// TLS.auto certificates before any member pod mounts them. A formed cluster's
		// members run on the certificates they have: a certificate problem holds back only
		// the steps that start a pod (see needsCertificates); observation, membership repair
		// and the storage's upkeep go on.
		if tlsWait, tlsErr = r.reconcileTLS(ctx, c); tlsErr != nil && c.Status.ClusterID == "" {
			return r.stop(before, c, tlsErr)
		}
		// A foreign budget of that name does not stop the members' care: reported below.
		if pdbErr = r.reconcilePDB(ctx, c); pdbErr != nil && !errors.Is(pdbErr, errNotOwned) {
			return r.stop(before, c, pdbErr)
		}
		changed, err := r.reconcileOwnership(ctx, c)
		if err != nil {
			return r.stop(before, c, err)
		}
		// Its restore verified c: the volumes of the cluster it replaced go.
		if err := r.releaseRetained(ctx, c); err != nil {
			return r.stop(before, c, err)
		}
		if changed {
			return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
		}
	}
	obs, err := r.observe(ctx, c)
	if err != nil {
		return r.stop(before, c, err)
	}
	if obs.etcd != nil {
		defer func() { _ = obs.etcd.Close() }()
	}
	setObservedStatus(c, obs)
	if keep := periodicRetention(c); keep > 0 && obs.Reachable {
		r.revisions.record(revisionKey(c), string(c.UID), r.Clock.Now(), lastRevision(obs), keep)
	}
	r.recallDefragmentations(c)
	setPaused(c)
	target, upgradeErr := targetVersion(c, obs)
	var restoreErr error
	if restoring(c) && !c.Spec.Paused {
		// Built from a backup: the restore's progress, its failure, or its verification.
		if restoreErr = r.reconcileRestore(ctx, c, obs); restoreErr != nil && c.Status.ClusterID == "" {
			return r.stop(before, c, restoreErr)
		}
	}
	if c.Spec.Paused {
		setConditions(c, obs, cluster.Action{Kind: cluster.ActionNone}, target, upgradeErr, nil, nil)
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	}
	if c.Spec.Hibernate {
		return r.hibernate(ctx, c, obs)
	}
	setAwake(c)
	act := cluster.Next(r.desired(c, target), obs.Observed)
	var res ctrl.Result
	if tlsErr != nil && needsCertificates(act.Kind) {
		err = fmt.Errorf("%s waits for the cluster's certificates: %w", act.Kind, tlsErr)
	} else {
		res, err = r.apply(ctx, c, obs, act, target)
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// The namespace goes, and the cluster with it: nothing to retry.
		return ctrl.Result{}, nil
	}
	if err == nil {
		// Kept volumes of replaced members whose retention passed go.
		var next time.Duration
		if next, err = r.expireReplaced(ctx, c, obs); next > 0 && (res.RequeueAfter == 0 || next < res.RequeueAfter) {
			res.RequeueAfter = next
		}
	}
	stepErr := err
	if stepErr == nil {
		stepErr = restoreErr // a formed cluster whose restore did not verify: Degraded says why
	}
	setConditions(c, obs, act, target, upgradeErr, stepErr, pdbErr)
	if act.Kind == cluster.ActionNone && err == nil && obs.etcd != nil {
		// Membership needs nothing: the volumes' size, then the storage's upkeep (NOSPACE,
		// defragmentation).
		res, err = r.upkeep(ctx, c, obs)
	}
	if act.Kind == cluster.ActionWaitForSeed && err == nil {
		err = errors.Join(r.setRestoreFailed(ctx, c), r.recordRecovery(ctx, c))
	}
	if act.Kind != cluster.ActionQuorumLost {
		// Quorum is back, or never lost: a later loss waits its full afterSeconds again.
		r.dataLostSince.Delete(string(c.UID))
		r.dataLostSince.Delete("survivors/" + string(c.UID))
	}
	if err == nil {
		r.settleSurvivorRecovery(c, act)
	}
	if act.Kind == cluster.ActionQuorumLost && err == nil {
		var wait time.Duration
		var why string
		recover := r.recover
		if c.Spec.SurvivorRecovery != nil {
			recover = r.recoverFromSurvivors
		}
		if wait, why, err = recover(ctx, c, obs); why != "" {
			setRecoveryMessage(c, why)
		}
		if wait > 0 {
			res = ctrl.Result{RequeueAfter: min(wait, requeueQuorumLost)}
		}
	}
	if tlsErr != nil && err == nil {
		// The pass did what it could; the certificate problem still shows and is retried.
		return r.stop(before, c, tlsErr)
	}
	r.warnOnFlip(before, c)
	if reason.Of(err) == etcdv1beta2.ReasonCertificateNotReady {
		return ctrl.Result{RequeueAfter: requeueCertificates}, nil
	}
	if blocked(err) {
		return ctrl.Result{RequeueAfter: requeueBlocked}, nil
	}
	if err == nil && tlsWait > 0 && (res.RequeueAfter == 0 || tlsWait < res.RequeueAfter) {
		res.RequeueAfter = tlsWait
	}
	return res, err
}

// needsCertificates reports whether step kind starts a member pod, which mounts the cluster's
// certificates: held back while they cannot be made or checked. Adding a member is too (its
// pod would follow), and so is deleting a failed volume member's pod (its re-creation would).
func needsCertificates(kind cluster.ActionKind) bool {
	switch kind {
	case cluster.ActionCreateSeed, cluster.ActionRestoreMembers, cluster.ActionCreatePod, cluster.ActionRecreatePod, cluster.ActionAddMember,
		cluster.ActionUpgradeMember, cluster.ActionDeleteFailed:
		return true
	}
	return false
}

// stop ends a pass that could not observe or act: Degraded with the reason, a Warning event
// when that reason is new. What waits on a person (blocked) is not retried with backoff but
// re-checked after requeueBlocked; a wait on cert-manager, after requeueCertificates.
func (r *Reconciler) stop(before, c *etcdv1beta2.EtcdCluster, err error) (ctrl.Result, error) {
	setFailure(c, err)
	r.warnOnFlip(before, c)
	if reason.Of(err) == etcdv1beta2.ReasonCertificateNotReady {
		return ctrl.Result{RequeueAfter: requeueCertificates}, nil
	}
	if blocked(err) {
		return ctrl.Result{RequeueAfter: requeueBlocked}, nil
	}
	return ctrl.Result{}, err
}

// blocked reports whether err waits on a person changing an object no watch of this
// controller reports: a foreign object in the way, a Secret that is missing or whose
// credentials etcd refuses, or cert-manager not installed. Those are re-checked every requeueBlocked instead of backing off
// for up to a quarter of an hour.
func blocked(err error) bool {
	switch reason.Of(err) {
	case etcdv1beta2.ReasonAuthFailed, etcdv1beta2.ReasonSecretNotFound, etcdv1beta2.ReasonInvalidCredentials, etcdv1beta2.ReasonCertManagerNotInstalled,
		etcdv1beta2.ReasonIssuerNotAllowed, etcdv1beta2.ReasonCoreosMembersFound, etcdv1beta2.ReasonTakeOverRefused, etcdv1beta2.ReasonRestoreFailed, etcdv1beta2.ReasonSeedConflict,
		etcdv1beta2.ReasonMemberRefused,
		// A restore from a prefix with no backup of its cluster yet, only corrupt ones, or a
		// store that does not answer: retried on the worker pool's own schedule.
		etcdv1beta2.ReasonNoSuccessfulBackup, etcdv1beta2.ReasonBackupCorrupt, etcdv1beta2.ReasonStorageUnreachable:
		return true
	}
	return errors.Is(err, errNotOwned)
}

// desired reduces the spec to what cluster.Next needs.
func (r *Reconciler) desired(c *etcdv1beta2.EtcdCluster, target string) cluster.Desired {
	d := cluster.Desired{Name: c.Name, Size: int(c.Spec.Size), Version: target, SpecHash: member.SpecHash(c), ReplaceAfter: c.ReplaceAfter(), TakeOver: takingOver(c)}
	d.PVC = c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil
	switch b := c.Spec.Bootstrap; {
	case b == nil || b.Restore == nil:
	case b.Restore.Source != nil:
		d.SeedMember, d.RestoredMembers, d.BuildRestored = restoreSeed(c), restoreLive(c), !restoreFailed(c)
	default:
		d.SeedMember, d.RestoredMembers = b.Restore.SeedMember, b.Restore.Members
	}
	return d
}

// warnOnFlip emits a Warning event when the cluster newly enters a state where the operator
// refuses to act (quorum lost, unverified membership, another cluster's members, a foreign
// object in the way) or an upgrade is newly refused: once per flip, not on every pass.
func (r *Reconciler) warnOnFlip(before, c *etcdv1beta2.EtcdCluster) {
	flipped := func(t string, reasons ...string) *metav1.Condition {
		key := string(c.UID) + "/" + t
		now := meta.FindStatusCondition(c.Status.Conditions, t)
		if now == nil || !slices.Contains(reasons, now.Reason) {
			r.warned.Delete(key)
			return nil
		}
		last, _ := r.warned.Swap(key, now.Reason)
		if prev := meta.FindStatusCondition(before.Status.Conditions, t); last == now.Reason || (prev != nil && prev.Reason == now.Reason && prev.Status == now.Status) {
			return nil
		}
		return now
	}
	if cond := flipped(etcdv1beta2.ClusterConditionDegraded, etcdv1beta2.ReasonQuorumLost, etcdv1beta2.ReasonMembershipUnverified,
		etcdv1beta2.ReasonClusterIDMismatch, etcdv1beta2.ReasonNotOwned, etcdv1beta2.ReasonRestoreFailed,
		etcdv1beta2.ReasonNoSpace, etcdv1beta2.ReasonQuotaExceeded, etcdv1beta2.ReasonAlarmRaised, etcdv1beta2.ReasonInvalidSpec,
		etcdv1beta2.ReasonVolumeExpansionUnsupported, etcdv1beta2.ReasonAuthFailed, etcdv1beta2.ReasonSecretNotFound, etcdv1beta2.ReasonInvalidCredentials,
		etcdv1beta2.ReasonCertManagerNotInstalled, etcdv1beta2.ReasonIssuerNotAllowed, etcdv1beta2.ReasonCoreosMembersFound, etcdv1beta2.ReasonTakeOverRefused,
		etcdv1beta2.ReasonMemberRefused); cond != nil {
		r.event(c, corev1.EventTypeWarning, cond.Reason, cond.Message)
	}
	if cond := flipped(etcdv1beta2.ClusterConditionUpgrading, etcdv1beta2.ReasonUnsupportedUpgrade); cond != nil {
		r.event(c, corev1.EventTypeWarning, cond.Reason, cond.Message)
	}
}

func (r *Reconciler) event(c *etcdv1beta2.EtcdCluster, typ, reason, msg string) {
	r.eventOn(c, typ, reason, msg)
}

// eventOn records an event on any object the cluster has (a volume it retains).
func (r *Reconciler) eventOn(obj runtime.Object, typ, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(obj, typ, reason, msg)
	}
}
