package etcdcluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubename"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=list;create
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackupschedules,verbs=get

// recover restores a cluster that lost quorum for good from its newest scheduled backup, when
// spec.recovery asks for it (docs/runbooks/quorum-loss.md). It acts only on fresh facts that
// rule out any member's data coming back: a formed cluster without volumes, no member
// answering, and no pod of the cluster at all (read around the cache), for afterSeconds since
// the loss; no member whose last node is not Ready (a pod force-deleted behind a partition may
// still run); a schedule with a successful backup; no restore of this cluster under way. Then it
// creates one EtcdRestore (the restore operator does the rest: verify the backup, replace
// the memberless cluster, verify every member). It returns the wait until it looks again and
// why it does not act yet.
func (r *Reconciler) recover(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (time.Duration, string, error) {
	rec := c.Spec.Recovery
	key := string(c.UID)
	if rec == nil || usesPVC(c) || obs.Reachable || !obs.Formed || len(obs.Pods) > 0 {
		r.dataLostSince.Delete(key)
		return 0, "", nil
	}
	// Since when this process has seen the cluster so (an operator restart starts over: it
	// waits longer, never shorter).
	v, _ := r.dataLostSince.LoadOrStore(key, r.Clock.Now())
	lostSince := v.(time.Time)
	after := time.Duration(etcdv1beta2.DefaultRecoveryAfterSeconds) * time.Second
	if rec.AfterSeconds != nil {
		after = time.Duration(*rec.AfterSeconds) * time.Second
	}
	if wait := lostSince.Add(after).Sub(r.Clock.Now()); wait > 0 {
		return wait, fmt.Sprintf("automatic recovery from EtcdBackupSchedule %s at %s unless a member comes back", rec.BackupScheduleName, lostSince.Add(after).UTC().Format(time.RFC3339)), nil
	}
	// Fresh facts: no pod of this cluster at all, by the API server's word. Every pod of the
	// namespace, by owner UID: a member whose labels someone changed is still a member.
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(c.Namespace)); err != nil {
		return 0, "", fmt.Errorf("listing the pods of namespace %s: %w", c.Namespace, err)
	}
	for i := range pods.Items {
		if controlledBy(&pods.Items[i], c) {
			return requeueQuorumLost, "automatic recovery waits: pod " + pods.Items[i].Name + " exists", nil
		}
	}
	if why, err := r.memberBehindPartition(ctx, c); err != nil || why != "" {
		return requeueQuorumLost, "automatic recovery waits: " + why, err
	}
	restores := &etcdv1beta2.EtcdRestoreList{}
	if err := r.APIReader.List(ctx, restores, client.InNamespace(c.Namespace)); err != nil {
		return 0, "", fmt.Errorf("listing EtcdRestores of %s: %w", klog.KObj(c), err)
	}
	for _, rs := range restores.Items {
		finished := meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete) ||
			meta.IsStatusConditionTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed)
		if rs.Spec.EtcdCluster.Name == c.Name && rs.Spec.ClusterTemplate == nil && (!finished || rs.Labels[etcdv1beta2.LabelRecoveryOfUID] == string(c.UID)) {
			return requeueQuorumLost, "automatic recovery: EtcdRestore " + rs.Name + " restores this cluster", nil
		}
	}
	sched := &etcdv1beta2.EtcdBackupSchedule{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rec.BackupScheduleName}, sched); err != nil {
		return requeueQuorumLost, fmt.Sprintf("automatic recovery impossible: EtcdBackupSchedule %s: %v", rec.BackupScheduleName, err), nil
	}
	if sched.Status.LastSuccessfulTime == nil {
		return requeueQuorumLost, "automatic recovery impossible: EtcdBackupSchedule " + sched.Name + " has no successful backup", nil
	}
	if why := notOwnRecentBackup(c, sched, lostSince); why != "" {
		return requeueQuorumLost, "automatic recovery impossible: " + why, nil
	}
	rpo := lostSince.Sub(sched.Status.LastSuccessfulTime.Time).Round(time.Second)
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace,
			Name:      recoveryName(c.Name, r.Clock.Now()),
			Labels:    map[string]string{etcdv1beta2.LabelRecoveryOf: c.Name, etcdv1beta2.LabelRecoveryOfUID: string(c.UID)},
			Annotations: map[string]string{
				etcdv1beta2.AnnotationQuorumLostAt: lostSince.UTC().Format(time.RFC3339),
				etcdv1beta2.AnnotationLastRevision: strconv.FormatInt(c.Status.LastRevision, 10),
			},
		},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: c.Name},
			BackupScheduleRef: &etcdv1beta2.LocalObjectReference{Name: sched.Name},
		},
	}
	if err := r.Create(ctx, rs); err != nil {
		return 0, "", fmt.Errorf("creating EtcdRestore %s for %s: %w", rs.Name, klog.KObj(c), err)
	}
	ctrl.LoggerFrom(ctx).Info("Automatic recovery", "restore", rs.Name, "schedule", sched.Name, "rpo", rpo)
	msg := fmt.Sprintf("quorum lost at %s with every member's data gone: restoring from EtcdBackupSchedule %s's newest backup (taken %s; up to %s of writes lost, last revision seen %d) with EtcdRestore %s",
		lostSince.UTC().Format(time.RFC3339), sched.Name, sched.Status.LastSuccessfulTime.UTC().Format(time.RFC3339), rpo, c.Status.LastRevision, rs.Name)
	r.event(c, corev1.EventTypeWarning, "AutomaticRecovery", msg)
	return requeueQuorumLost, msg, nil
}

// memberBehindPartition names a member that may still run although its pod is gone, or "": one
// whose last node (status.members.details) exists and is not Ready. A pod force-deleted there
// (kubectl delete pod --force, during a partition) leaves its containers running until the
// kubelet hears of it, so the member's data may come back. Once the node is Ready again its
// kubelet stops what was deleted; once it is deleted (kubectl delete node: the administrator's
// word that it is gone) nothing of it comes back. A namespaced install, which may not read
// nodes, cannot tell and goes on as before (docs/runbooks/quorum-loss.md).
func (r *Reconciler) memberBehindPartition(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, error) {
	for _, d := range c.Status.Members.Details {
		if d.NodeName == "" {
			continue
		}
		n := &corev1.Node{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: d.NodeName}, n)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			ctrl.LoggerFrom(ctx).Info("Cannot read the node a member last ran on; automatic recovery goes on without knowing whether it is partitioned", "member", d.Name, "node", d.NodeName, "error", err.Error())
			continue
		case err != nil:
			return "", fmt.Errorf("reading node %s, where member %s last ran: %w", d.NodeName, d.Name, err)
		}
		if !nodeReady(n) {
			return fmt.Sprintf("member %s last ran on node %s, which is not Ready: its pod is gone but its etcd may still run there behind a partition; recovery goes on once the node is Ready again or deleted (kubectl delete node %s, if it is gone for good)",
				d.Name, d.NodeName, d.NodeName), nil
		}
	}
	return "", nil
}

// nodeReady: the node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// notOwnRecentBackup says why the newest successful backup of sched is not one automatic
// recovery may restore into c, or "" when it may: it must be c's own (the schedule backs up c,
// and a key that records a cluster identity names c's namespace and cluster ID) and taken at
// most maxBackupAgeSeconds before the loss.
func notOwnRecentBackup(c *etcdv1beta2.EtcdCluster, sched *etcdv1beta2.EtcdBackupSchedule, lostSince time.Time) string {
	tmpl := sched.Spec.BackupTemplate.Spec
	_, key, parsed := snapshot.SplitKey(sched.Status.LastSuccessfulLocation)
	switch {
	case parsed && key.Tagged():
		id, err := strconv.ParseUint(c.Status.ClusterID, 16, 64)
		if key.Namespace != c.Namespace || err != nil || key.ClusterID != id {
			return fmt.Sprintf("the newest backup of EtcdBackupSchedule %s (%s) is of cluster %s, not of this cluster (ID %s)",
				sched.Name, sched.Status.LastSuccessfulLocation, key.Describe(), c.Status.ClusterID)
		}
	case tmpl.EtcdCluster == nil || tmpl.EtcdCluster.Name != c.Name:
		return fmt.Sprintf("EtcdBackupSchedule %s does not back up this cluster (its backups record no cluster identity to prove otherwise)", sched.Name)
	}
	maxAge := int64(etcdv1beta2.DefaultRecoveryMaxBackupAgeSeconds)
	if m := c.Spec.Recovery.MaxBackupAgeSeconds; m != nil {
		maxAge = *m
	}
	if age := lostSince.Sub(sched.Status.LastSuccessfulTime.Time); age > time.Duration(maxAge)*time.Second {
		return fmt.Sprintf("the newest backup of EtcdBackupSchedule %s was taken %s before the loss, more than recovery.maxBackupAgeSeconds (%d): restore it yourself if that loss is acceptable",
			sched.Name, age.Round(time.Second), maxAge)
	}
	return ""
}

// recoveryName is the name of the EtcdRestore of an automatic recovery of cluster at t:
// <cluster>-recovery-<UTC time, 14 digits>, one per attempt. The restore operator puts it in
// a label (etcd.database.coreos.com/restore) on the pods it makes, so it must be at most 63
// characters: a cluster name of more than 39 is shortened and suffixed with a hash of it.
func recoveryName(cluster string, t time.Time) string {
	return kubename.Fit(cluster, "-recovery-"+t.UTC().Format("20060102150405"), validation.LabelValueMaxLength)
}

// recordRecovery fills status.lastRecovery of a cluster seeded by an automatic recovery's
// EtcdRestore: what was restored and how much was lost. Read once, while the seed is awaited.
func (r *Reconciler) recordRecovery(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	b := c.Spec.Bootstrap
	if b == nil || b.Restore == nil || b.Restore.RestoreName == "" || c.Status.LastRecovery != nil || c.Status.ClusterID != "" {
		return nil
	}
	rs := &etcdv1beta2.EtcdRestore{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: b.Restore.RestoreName}, rs); err != nil {
		return client.IgnoreNotFound(err)
	}
	if rs.Labels[etcdv1beta2.LabelRecoveryOf] != c.Name || rs.Status.BackupTime == nil {
		return nil
	}
	rec := &etcdv1beta2.RecoveryRecord{RestoreName: rs.Name, BackupTime: rs.Status.BackupTime}
	if t, err := time.Parse(time.RFC3339, rs.Annotations[etcdv1beta2.AnnotationQuorumLostAt]); err == nil {
		rec.QuorumLostAt = &metav1.Time{Time: t}
		rec.RPOSeconds = int64(t.Sub(rs.Status.BackupTime.Time).Round(time.Second) / time.Second)
	}
	if last, err := strconv.ParseInt(rs.Annotations[etcdv1beta2.AnnotationLastRevision], 10, 64); err == nil && last > 0 && rs.Status.BackupRevision > 0 {
		rec.RPORevisions = max(0, last-rs.Status.BackupRevision)
	}
	c.Status.LastRecovery = rec
	return nil
}

// lastRevision is the highest revision the members answered at.
func lastRevision(obs *observation) int64 {
	var rev int64
	for _, s := range obs.Status {
		rev = max(rev, s.Revision)
	}
	return rev
}

// setRecoveryMessage adds what automatic recovery does (or why not yet) to QuorumLost.
func setRecoveryMessage(c *etcdv1beta2.EtcdCluster, why string) {
	if d := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded); d != nil && d.Reason == etcdv1beta2.ReasonQuorumLost {
		d.Message += "; " + why
	}
}
