package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// noSpaceCompactTarget is the revision a NOSPACE recovery compacts to, from the newest revision
// rev: all history, except what the user keeps (spec.maintenance.autoCompaction, where set:
// Revision mode keeps the last retention revisions, Periodic mode the revisions of the last
// retention period, as far as this process's revision log knows them, else nothing is
// compacted) and what the restore that seeds this cluster still verifies at (its
// status.verification.revision, until it finishes). 0: compact nothing.
func (r *Reconciler) noSpaceCompactTarget(ctx context.Context, c *etcdv1beta2.EtcdCluster, rev int64) (int64, error) {
	target := rev
	if m := c.Spec.Maintenance; m != nil && m.AutoCompaction != nil && m.AutoCompaction.Mode == etcdv1beta2.AutoCompactionRevision {
		if keep, err := strconv.ParseInt(m.AutoCompaction.Retention, 10, 64); err == nil && keep > 0 {
			target = rev - keep
		}
	}
	if keep := periodicRetention(c); keep > 0 {
		// The revision the members were at when the retention window began; none known (this
		// process started less than the retention ago): compact nothing, etcd's own periodic
		// compactor still drops what is older.
		target, _ = r.revisions.at(revisionKey(c), string(c.UID), r.Clock.Now().Add(-keep))
	}
	if restoring(c) && c.Status.Restore != nil && c.Status.Restore.Revision > 0 {
		target = min(target, c.Status.Restore.Revision) // this operator's own restore still verifies there
	}
	if b := c.Spec.Bootstrap; b != nil && b.Restore != nil && b.Restore.RestoreName != "" {
		rs := &etcdv1beta2.EtcdRestore{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: b.Restore.RestoreName}, rs)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, fmt.Errorf("NOSPACE: getting EtcdRestore %s of %s: %w", b.Restore.RestoreName, klog.KObj(c), err)
		case meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete),
			meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed):
		case rs.Status.Verification != nil && rs.Status.Verification.Revision > 0:
			target = min(target, rs.Status.Verification.Revision)
		}
	}
	return max(target, 0), nil
}

// periodicRetention is the history the user keeps by time (spec.maintenance.autoCompaction set
// with mode Periodic, the mode's default), 0 where it is not set that way.
func periodicRetention(c *etcdv1beta2.EtcdCluster) time.Duration {
	m := c.Spec.Maintenance
	if m == nil || m.AutoCompaction == nil || (m.AutoCompaction.Mode != "" && m.AutoCompaction.Mode != etcdv1beta2.AutoCompactionPeriodic) {
		return 0
	}
	retention := m.AutoCompaction.Retention
	if retention == "" {
		retention = etcdv1beta2.DefaultAutoCompactionRetention
	}
	d, err := time.ParseDuration(retention) // admission allows durations such as 30m or 1h only
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// revisionKey names cluster c in the revision log.
func revisionKey(c *etcdv1beta2.EtcdCluster) string { return c.Namespace + "/" + c.Name }

// maintain takes the single next upkeep step of a cluster whose membership needs nothing
// (cluster.Next said None): during a NOSPACE alarm it compacts the history and re-reads the
// members' sizes first; then cluster.NextMaintenance picks one defragmentation, the alarm's
// clearing, or the end of a scheduled round. Conditions for the step are set by
// setMaintenanceConditions.
func (r *Reconciler) maintain(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (cluster.MaintenanceAction, ctrl.Result, error) {
	now := r.Clock.Now()
	policy, err := maintenancePolicy(c, now)
	if err != nil {
		return cluster.MaintenanceAction{}, ctrl.Result{RequeueAfter: requeueSteady}, err
	}
	policy.QuotaExceeded = obs.quotaExceeded
	alarms, err := obs.etcd.Alarms(ctx)
	if err != nil {
		return cluster.MaintenanceAction{}, ctrl.Result{}, fmt.Errorf("listing alarms of %s: %w", klog.KObj(c), err)
	}
	if cluster.NoSpace(alarms) {
		rev := int64(0)
		for _, s := range obs.Status {
			rev = max(rev, s.Revision)
		}
		target, err := r.noSpaceCompactTarget(ctx, c, rev)
		if err != nil {
			return cluster.MaintenanceAction{}, ctrl.Result{}, err
		}
		if target > 0 {
			if err := obs.etcd.Compact(ctx, target); err != nil {
				return cluster.MaintenanceAction{}, ctrl.Result{}, fmt.Errorf("NOSPACE: compacting %s: %w", klog.KObj(c), err)
			}
			maintenanceSteps.WithLabelValues(c.Namespace, c.Name, "Compact").Inc()
		}
		// Fresh sizes: the compaction freed pages that a defragmentation can give back.
		r.probeMembers(ctx, c, obs.etcd, obs)
		setObservedStatus(c, obs)
		r.recallDefragmentations(c)
	}
	if len(cluster.CorruptAlarms(alarms)) > 0 && c.ReplaceAfter() > 0 {
		return r.replaceCorrupt(ctx, c, obs, alarms)
	}
	act := cluster.NextMaintenance(policy, obs.Observed, alarms)
	log := ctrl.LoggerFrom(ctx).WithValues("maintenance", act.Kind, "member", act.Pod)
	switch act.Kind {
	case cluster.MaintenanceDefragment:
		before := obs.Status[act.MemberID]
		start := time.Now()
		url := member.ClientURL(c, act.Pod)
		if err := obs.etcd.Defragment(ctx, url); err != nil {
			return act, ctrl.Result{}, fmt.Errorf("defragmenting member %s of %s: %w", act.Pod, klog.KObj(c), err)
		}
		took := time.Since(start).Round(time.Millisecond)
		after, err := obs.etcd.Status(ctx, url)
		if err != nil {
			after = before
		}
		r.markDefragmented(c, act.MemberID, now)
		log.Info("Defragmented", "took", took, "dbSizeBefore", before.DBSize, "dbSizeAfter", after.DBSize)
		r.Recorder.Eventf(c, corev1.EventTypeNormal, "Defragmented", "member %s: database file %d -> %d bytes in %s (%s)", act.Pod, before.DBSize, after.DBSize, took, act.Message)
		maintenanceSteps.WithLabelValues(c.Namespace, c.Name, string(act.Kind)).Inc()
		return act, ctrl.Result{RequeueAfter: requeueAfterChange}, nil
	case cluster.MaintenanceDisarm:
		for _, a := range act.Alarms {
			if err := obs.etcd.Disarm(ctx, "", a); err != nil {
				return act, ctrl.Result{}, fmt.Errorf("clearing the NOSPACE alarm of %s: %w", klog.KObj(c), err)
			}
		}
		log.Info("Cleared the NOSPACE alarm")
		maintenanceSteps.WithLabelValues(c.Namespace, c.Name, string(act.Kind)).Inc()
		r.Recorder.Event(c, corev1.EventTypeNormal, "AlarmCleared", act.Message)
		return act, ctrl.Result{RequeueAfter: requeueAfterChange}, nil
	case cluster.MaintenanceRoundDone:
		if !policy.RoundDue.IsZero() { // else the requested round alone: trackDefragmentRequest
			c.Status.LastDefragmentationRound = &metav1.Time{Time: now}
			r.Recorder.Event(c, corev1.EventTypeNormal, "DefragmentationRoundDone", act.Message)
		}
	}
	if len(alarms) == 0 && cluster.NearQuota(policy.QuotaBytes, obs.Observed) {
		// No watch reports a NOSPACE alarm: look again soon while one is close. Once an alarm
		// is up, the steps above or the steady period pace the passes (a quota too small for
		// the data itself is not re-checked every few seconds for ever).
		return act, ctrl.Result{RequeueAfter: requeueEtcdWait}, nil
	}
	return act, ctrl.Result{RequeueAfter: requeueSteady}, nil
}

// maintenancePolicy reads spec.maintenance.defragmentation (with its defaults) and the
// defragmentation records in status (the members' times, the requested round under way). A
// schedule that does not parse is InvalidSpec.
func maintenancePolicy(c *etcdv1beta2.EtcdCluster, now time.Time) (cluster.MaintenancePolicy, error) {
	p := cluster.MaintenancePolicy{
		QuotaBytes: etcdv1beta2.DefaultQuotaBackendBytes, FragmentedPercent: etcdv1beta2.DefaultFragmentedPercent,
		MinFreeBytes: etcdv1beta2.DefaultMinFreeBytes.Value(), LastDefragmented: map[uint64]time.Time{}, Now: now,
	}
	p.Requested, p.RequestDone = requestedRound(c)
	for _, d := range c.Status.Members.Details {
		var id uint64
		if _, err := fmt.Sscanf(d.ID, "%x", &id); err == nil && d.LastDefragmentationTime != nil {
			p.LastDefragmented[id] = d.LastDefragmentationTime.Time
		}
	}
	m := c.Spec.Maintenance
	if m == nil {
		return p, nil
	}
	if m.QuotaBackendBytes != nil {
		p.QuotaBytes = m.QuotaBackendBytes.Value()
	}
	d := m.Defragmentation
	if d == nil {
		return p, nil
	}
	if d.FragmentedPercent != nil {
		p.FragmentedPercent = int(*d.FragmentedPercent)
	}
	if d.MinFreeBytes != nil {
		p.MinFreeBytes = d.MinFreeBytes.Value()
	}
	if d.Schedule == "" {
		return p, nil
	}
	sched, err := cron.ParseStandard(d.Schedule)
	if err != nil {
		return p, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "spec.maintenance.defragmentation.schedule %q is not a cron schedule: %v", d.Schedule, err)
	}
	since := c.CreationTimestamp.Time
	if c.Status.LastDefragmentationRound != nil {
		since = c.Status.LastDefragmentationRound.Time
	}
	if due := sched.Next(since.UTC()); !now.Before(due) {
		p.RoundDue = due
	}
	return p, nil
}

// markDefragmented records in status, and in memory, when member id was defragmented.
func (r *Reconciler) markDefragmented(c *etcdv1beta2.EtcdCluster, id uint64, now time.Time) {
	r.defragmented.Store(string(c.UID)+"/"+fmt.Sprintf("%x", id), now.Truncate(time.Second)) // status keeps seconds
	r.recallDefragmentations(c)
}

// recallDefragmentations sets each member's lastDefragmentationTime to the later of status and
// this process's memory.
func (r *Reconciler) recallDefragmentations(c *etcdv1beta2.EtcdCluster) {
	for i := range c.Status.Members.Details {
		d := &c.Status.Members.Details[i]
		v, ok := r.defragmented.Load(string(c.UID) + "/" + d.ID)
		if t, _ := v.(time.Time); ok && (d.LastDefragmentationTime == nil || d.LastDefragmentationTime.Time.Before(t)) {
			d.LastDefragmentationTime = &metav1.Time{Time: t}
		}
	}
}

// setMaintenanceConditions reports alarms (seen by any pass, from the members' status) and
// the upkeep step of this pass: Degraded for NOSPACE, a full quota or another alarm, an
// invalid defragmentation schedule; Progressing while a member is defragmented or an alarm
// cleared.
func setMaintenanceConditions(c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.MaintenanceAction, err error) {
	set := func(t string, status metav1.ConditionStatus, why, msg string) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: why, Message: msg, ObservedGeneration: c.Generation})
	}
	degraded := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
	if degraded != nil && degraded.Status == metav1.ConditionTrue {
		return // a membership problem says more
	}
	switch {
	case err != nil:
		set(etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue, failureReason(err), err.Error())
		return
	case act.Kind == cluster.MaintenanceQuotaTooSmall:
		set(etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue, etcdv1beta2.ReasonQuotaExceeded, act.Message)
		return
	}
	if alarms := observedAlarms(obs); alarms != "" && act.Kind != cluster.MaintenanceDisarm && act.Kind != cluster.MaintenanceReplaceCorrupt {
		why := etcdv1beta2.ReasonAlarmRaised
		if strings.Contains(alarms, cluster.AlarmNoSpace) {
			why = etcdv1beta2.ReasonNoSpace
		}
		msg := "etcd alarm active, writes are refused: " + alarms
		if act.Message != "" {
			msg += "; " + act.Message
		}
		set(etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue, why, msg)
	}
	if act.Kind == cluster.MaintenanceDefragment || act.Kind == cluster.MaintenanceDisarm || act.Kind == cluster.MaintenanceReplaceCorrupt {
		set(etcdv1beta2.ClusterConditionProgressing, metav1.ConditionTrue, string(act.Kind), act.Message)
	}
}

// observedAlarms lists the alarms the members reported in their status, once each.
func observedAlarms(obs *observation) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range obs.Status {
		for _, a := range s.Alarms {
			if a = strings.TrimSpace(a); !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// upkeep takes at most one step on a cluster whose membership needs nothing: a member's
// volume grown to the spec's size (or waited for), else one maintenance step.
func (r *Reconciler) upkeep(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (ctrl.Result, error) {
	if err := r.reconcileAuth(ctx, c, obs); err != nil {
		setFailure(c, err)
		return ctrl.Result{}, err
	}
	step, err := r.expandVolumes(ctx, c, obs)
	setVolumeConditions(c, step)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case step.kind == volumeExpanding:
		return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
	case step.kind == volumeResizing:
		return ctrl.Result{RequeueAfter: requeueEtcdWait}, nil
	}
	act, res, err := r.maintain(ctx, c, obs)
	setMaintenanceConditions(c, obs, act, err)
	r.trackDefragmentRequest(c, act, err)
	if reason.Of(err) == etcdv1beta2.ReasonInvalidSpec {
		err = nil // reported in Degraded; looked at again when the spec changes or after res
	}
	if step.kind == volumeUnsupported || step.kind == volumeShrink {
		res = ctrl.Result{RequeueAfter: requeueBlocked}
	}
	return res, err
}
