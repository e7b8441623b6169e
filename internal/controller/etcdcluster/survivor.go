package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// recoverFromSurvivors brings a cluster with volumes that lost quorum for good back from its
// surviving minority, when spec.survivorRecovery asks for it (docs/runbooks/quorum-loss.md):
// once the volumes of a majority of the voting members have been gone for afterSeconds (read
// around the cache), and every survivor answers its status, the survivor with the newest data
// (cluster.PlanSurvivorRecovery) is kept. In the order that loses nothing if a pass stops
// half-way: its volume is marked (AnnotationForceNewCluster: its next pod starts with
// --force-new-cluster), the other survivors' volumes are marked replaced (kept, never a
// member's again) and their pods deleted, the lost members' pods deleted, and last the kept
// member's pod deleted, to be made again with the flag (RecreatePod). The planner then restarts
// it without the flag once it stands alone (ActionRestartForced) and grows the cluster back.
// status.lastSurvivorRecovery records the choice (written with the pass's status patch: a pass
// that fails to write it leaves the recovery going on, unrecorded); a second recovery never
// starts before that one completed. It returns the wait until it looks again and why it does
// not act yet.
func (r *Reconciler) recoverFromSurvivors(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (time.Duration, string, error) {
	after := c.SurvivorRecoveryAfter()
	key := "survivors/" + string(c.UID)
	if after == 0 || !usesPVC(c) {
		r.dataLostSince.Delete(key)
		return 0, "", nil
	}
	if rec := c.Status.LastSurvivorRecovery; rec != nil && rec.CompletedAt == nil {
		return requeueQuorumLost, fmt.Sprintf("recovery from survivor %s (started %s) has not completed: no second recovery starts before the cluster was back at its full size; a person decides (restore from a backup)",
			rec.Member, rec.StartedAt.UTC().Format(time.RFC3339)), nil
	}
	volumes, forced, err := r.memberVolumes(ctx, c)
	if err != nil {
		return 0, "", err
	}
	plan, why := cluster.PlanSurvivorRecovery(obs.Observed, volumes, forced)
	if why != "" {
		// Looked at again sooner than other lost quorums: right after a loss the survivor
		// still follows the dead leader for an election timeout, and a survivor's pod may be
		// starting; the wait of afterSeconds starts only once the plan holds.
		r.dataLostSince.Delete(key)
		return requeueEtcdWait, "no recovery from the survivors: " + why, nil
	}
	// Since when this process has seen the majority's volumes gone (an operator restart starts
	// over: it waits longer, never shorter).
	v, _ := r.dataLostSince.LoadOrStore(key, r.Clock.Now())
	lostSince := v.(time.Time)
	if wait := lostSince.Add(after).Sub(r.Clock.Now()); wait > 0 {
		return wait, fmt.Sprintf("recovery from the survivors at %s unless a lost member comes back: %s", lostSince.Add(after).UTC().Format(time.RFC3339), plan.Describe()), nil
	}

	keep := plan.Keep.PodName()
	if err := r.markVolume(ctx, c, keep, "", map[string]string{etcdv1beta2.AnnotationForceNewCluster: r.Clock.Now().UTC().Format(time.RFC3339)}); err != nil {
		return 0, "", err
	}
	for _, m := range plan.Others {
		if volumes[m.PodName()] {
			// Read fresh, not from the cache: an unmarked survivor's volume would be taken for a
			// member's to bring back, and its removed member's pod deleted with it.
			pvc := &corev1.PersistentVolumeClaim{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: m.PodName()}, pvc); err != nil {
				return 0, "", fmt.Errorf("getting volume %s of %s: %w", m.PodName(), klog.KObj(c), err)
			}
			if err := r.markReplaced(ctx, c, pvc, m.ID); err != nil {
				return 0, "", err
			}
		}
		if err := r.deleteMember(ctx, c, obs, m.PodName(), false); err != nil {
			return 0, "", err
		}
	}
	for _, m := range plan.Lost {
		if err := r.deleteMember(ctx, c, obs, m.PodName(), false); err != nil {
			return 0, "", err
		}
	}
	if err := r.deleteMember(ctx, c, obs, keep, false); err != nil {
		return 0, "", err
	}
	now := metav1.NewTime(r.Clock.Now())
	c.Status.LastSurvivorRecovery = &etcdv1beta2.SurvivorRecoveryRecord{
		Member: keep, MemberID: fmt.Sprintf("%x", plan.Keep.ID), Revision: plan.Status.Revision, RaftIndex: plan.Status.RaftIndex,
		LastRevision: c.Status.LastRevision, Candidates: plan.Candidates, LostMembers: cluster.PodNames(plan.Lost),
		QuorumLostAt: &metav1.Time{Time: lostSince}, StartedAt: &now,
	}
	r.dataLostSince.Delete(key)
	msg := fmt.Sprintf("quorum lost since %s with the volumes of a majority gone: %s; restarting %s alone with --force-new-cluster and growing the cluster back (last revision seen %d, %d kept)",
		lostSince.UTC().Format(time.RFC3339), plan.Describe(), keep, c.Status.LastRevision, plan.Status.Revision)
	ctrl.LoggerFrom(ctx).Info("Recovery from the survivors", "member", keep, "revision", plan.Status.Revision, "raftIndex", plan.Status.RaftIndex)
	r.event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonSurvivorRecovery, msg)
	return requeueAfterChange, msg, nil
}

// memberVolumes lists, around the cache, the names of the members whose volume c controls and
// that no replacement marked (terminating ones included: their members may still run), and the
// member whose volume an earlier pass marked for --force-new-cluster ("" if none).
func (r *Reconciler) memberVolumes(ctx context.Context, c *etcdv1beta2.EtcdCluster) (map[string]bool, string, error) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(c.Namespace)); err != nil {
		return nil, "", fmt.Errorf("listing the volumes of namespace %s: %w", c.Namespace, err)
	}
	volumes, forced := map[string]bool{}, ""
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if !controlledBy(pvc, c) || pvc.Annotations[etcdv1beta2.AnnotationReplacedAt] != "" {
			continue
		}
		volumes[pvc.Name] = true
		if pvc.Annotations[etcdv1beta2.AnnotationForceNewCluster] != "" {
			forced = pvc.Name
		}
	}
	return volumes, forced, nil
}

// restartForced restarts the member that stands alone after --force-new-cluster without the
// flag (cluster.ActionRestartForced): its volume's mark goes first, then its pod, which
// RecreatePod makes again on the volume. A pass stopped between them finds the pod still
// forced and deletes it.
func (r *Reconciler) restartForced(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, name string) error {
	if err := r.markVolume(ctx, c, name, "", map[string]string{etcdv1beta2.AnnotationForceNewCluster: ""}); err != nil {
		return err
	}
	return r.deleteMember(ctx, c, obs, name, false)
}

// markVolume sets annotations that are not set yet (value "": removes them) on member name's
// volume, read again around the cache and still controlled by c (and still the claim uid, when
// uid is set).
func (r *Reconciler) markVolume(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, uid types.UID, annotations map[string]string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pvc); err != nil {
		return fmt.Errorf("getting volume %s of %s: %w", name, klog.KObj(c), err)
	}
	if (uid != "" && pvc.UID != uid) || !controlledBy(pvc, c) {
		return notOwned("volume", pvc, c)
	}
	before := pvc.DeepCopy()
	changed := false
	for k, v := range annotations {
		switch {
		case v == "" && pvc.Annotations[k] != "":
			delete(pvc.Annotations, k)
			changed = true
		case v != "" && pvc.Annotations[k] == "":
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[k] = v
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := r.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("annotating volume %s of %s: %w", name, klog.KObj(c), err)
	}
	return nil
}

// settleSurvivorRecovery records that a recovery from the survivors completed: the pass found
// nothing to do (every member healthy, the cluster at its size).
func (r *Reconciler) settleSurvivorRecovery(c *etcdv1beta2.EtcdCluster, act cluster.Action) {
	rec := c.Status.LastSurvivorRecovery
	if rec == nil || rec.CompletedAt != nil || act.Kind != cluster.ActionNone {
		return
	}
	now := metav1.NewTime(r.Clock.Now())
	rec.CompletedAt = &now
	r.event(c, corev1.EventTypeNormal, etcdv1beta2.ReasonSurvivorRecoveryCompleted, fmt.Sprintf(
		"recovered from member %s at revision %d: %d members, every one healthy, %s after the recovery started", rec.Member, rec.Revision, c.Spec.Size, now.Sub(rec.StartedAt.Time).Round(time.Second)))
}
