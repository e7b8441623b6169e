package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// requeueCorrupt paces the passes while a CORRUPT alarm waits for proof or a person: each
// asks every member to hash its whole key space.
const requeueCorrupt = 15 * time.Second

// replaceCorrupt answers a CORRUPT alarm raised by etcd's corruption checks
// (spec.memberReplacement.corruptionCheckSeconds): it asks every member for its hash at one
// revision (the alarm stops writes, so the members meet there), and when cluster.PlanCorrupt
// proves one member corrupt it replaces that member as an unhealthy one is (its volume kept,
// removed from the membership, its pod deleted; a fresh member follows) and then clears the
// alarms, in that order: cleared first, the corrupt member would serve again. Anything less
// proven is reported (Degraded AlarmRaised, with the hashes) and looked at again.
func (r *Reconciler) replaceCorrupt(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, alarms []cluster.Alarm) (cluster.MaintenanceAction, ctrl.Result, error) {
	rev := int64(0)
	for _, s := range obs.Status {
		if rev == 0 || s.Revision < rev {
			rev = s.Revision
		}
	}
	hashes := map[uint64]cluster.KVHash{}
	for _, m := range obs.Members {
		h, err := obs.etcd.HashKV(ctx, member.ClientURL(c, m.PodName()), rev)
		if err == nil && h.MemberID == m.ID { // the member its pod's URL should reach, no other
			hashes[m.ID] = h
		}
	}
	plan := cluster.PlanCorrupt(obs.Observed, int(c.Spec.Size), alarms, hashes)
	log := ctrl.LoggerFrom(ctx).WithValues("maintenance", cluster.MaintenanceReplaceCorrupt)
	if plan.Replace.ID == 0 && len(plan.Disarm) == 0 {
		log.Info("CORRUPT alarm: no member proven corrupt", "why", plan.Why)
		return cluster.MaintenanceAction{Kind: cluster.MaintenanceBlocked, Message: "no member is proven corrupt, so the operator waits for a person: " + plan.Why},
			ctrl.Result{RequeueAfter: requeueCorrupt}, nil
	}
	act := cluster.MaintenanceAction{Kind: cluster.MaintenanceReplaceCorrupt, Alarms: plan.Disarm, Message: plan.Why}
	if plan.Replace.ID != 0 {
		act.MemberID, act.Pod = plan.Replace.ID, plan.Replace.PodName()
		act.Message = fmt.Sprintf("replacing member %s: etcd's corruption check raised CORRUPT, and its %s", act.Pod, plan.Why)
		replace := cluster.Action{Kind: cluster.ActionReplaceMember, MemberID: act.MemberID, Pod: act.Pod, Message: act.Message}
		if err := r.replaceMember(ctx, c, obs, replace); err != nil {
			return act, ctrl.Result{}, err
		}
	}
	via := "" // through a member that stays: the removed one stopped its raft
	for _, m := range obs.Members {
		if act.MemberID != 0 && m.ID != act.MemberID {
			via = member.ClientURL(c, m.PodName())
			break
		}
	}
	for _, a := range plan.Disarm {
		if err := obs.etcd.Disarm(ctx, via, a); err != nil {
			return act, ctrl.Result{}, fmt.Errorf("clearing the CORRUPT alarm of %s: %w", klog.KObj(c), err)
		}
	}
	log.Info("Cleared the CORRUPT alarm", "replaced", act.Pod, "why", plan.Why)
	maintenanceSteps.WithLabelValues(c.Namespace, c.Name, string(act.Kind)).Inc()
	r.Recorder.Event(c, corev1.EventTypeNormal, "AlarmCleared", "CORRUPT alarm cleared: "+plan.Why)
	return act, ctrl.Result{RequeueAfter: requeueAfterChange}, nil
}
