package etcdcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// Requeue intervals for what no watch reports: etcd's own state.
const (
	// requeueAfterChange observes again shortly after one membership or pod change.
	requeueAfterChange = 2 * time.Second
	// requeueEtcdWait waits for a member to start, catch up or become healthy.
	requeueEtcdWait = 5 * time.Second
	// requeueJustStarted waits for a member whose etcd started less than justStarted ago: it
	// usually answers, catches up or gets a leader within a second or two, and its readiness
	// probe (every 5 s) would report that late. Bounded: a member that does not come up is
	// looked at every requeueEtcdWait after that (no hot loop, TestNoHotLoops).
	requeueJustStarted = time.Second
	justStarted        = 15 * time.Second
	// requeueAfterPromote looks again right after a promotion: the next member can usually be
	// added at once.
	requeueAfterPromote = 500 * time.Millisecond
	// requeueQuorumLost keeps watching a cluster that lost quorum.
	requeueQuorumLost = 30 * time.Second
	// requeueSteady re-checks a healthy cluster: member health is not watchable.
	requeueSteady = 60 * time.Second
	// requeueUnverified observes again after a step was held back because the member list
	// was not linearizable or came from another cluster.
	requeueUnverified = 10 * time.Second
	// requeueBlocked re-checks a foreign object in the way (no watch reports its removal).
	requeueBlocked = 15 * time.Second
	// requeueChoosing looks again at a restore choosing its backup in the worker pool, whose
	// event normally brings the next pass sooner.
	requeueChoosing = 15 * time.Second
)

// apply carries out one step chosen by cluster.Next. A pod it makes runs the step's version
// (cluster.Next sets it: the target, or during a downgrade the newest release a pod runs),
// else version.
func (r *Reconciler) apply(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.Action, version string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("action", act.Kind, "member", act.Pod)
	podVersion := cmp.Or(act.Version, version)
	switch act.Kind {
	case cluster.ActionNone:
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	case cluster.ActionWait, cluster.ActionWaitForSeed:
		return ctrl.Result{RequeueAfter: waitInterval(obs.pods[act.Pod], time.Now())}, nil
	case cluster.ActionQuorumLost:
		return ctrl.Result{RequeueAfter: requeueQuorumLost}, nil
	case cluster.ActionMembershipUnverified, cluster.ActionClusterIDMismatch:
		return ctrl.Result{RequeueAfter: requeueUnverified}, nil
	case cluster.ActionRestoreMembers:
		created, err := r.createRestoreMembers(ctx, c, obs)
		if err != nil || !created {
			return ctrl.Result{RequeueAfter: requeueChoosing}, err
		}
	case cluster.ActionCreateSeed:
		if err := r.createMemberPod(ctx, c, act.Pod, podVersion, "new", act.Pod+"="+member.PeerURL(c, act.Pod)); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionCreatePod, cluster.ActionRecreatePod:
		if act.Kind == cluster.ActionRecreatePod {
			going, err := r.volumeGoing(ctx, c, act.Pod)
			if err != nil {
				return ctrl.Result{}, err
			}
			if going {
				log.V(1).Info("Not recreating a member on a volume that is being deleted")
				return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
			}
		}
		state := "existing"
		if !obs.Reachable && !obs.Formed {
			state = "new" // the seed's pod went away before the cluster formed; its volume stays
		}
		pod := member.NewPod(c, act.Pod, podVersion, state, member.InitialCluster(c, obs.Members, act.Pod))
		if pvc := obs.pvcs[act.Pod]; pvc != nil && pvc.Annotations[etcdv1beta2.AnnotationForceNewCluster] != "" {
			member.ForceNewCluster(pod) // the member a recovery from the survivors keeps (survivor.go)
		}
		if err := r.createMember(ctx, c, pod); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionRestartForced:
		if err := r.restartForced(ctx, c, obs, act.Pod); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionAddMember:
		m, err := obs.etcd.AddLearner(ctx, member.PeerURL(c, act.Pod))
		if errors.Is(err, cluster.ErrNotReadyForChange) {
			log.V(1).Info("Cluster not ready for a membership change yet")
			return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("adding member %s to %s: %w", act.Pod, klog.KObj(c), err)
		}
		r.Failpoint(FailpointAfterMemberAdd)
		// Create the pod in the same pass; a crash before this line is finished by CreatePod.
		if err := r.createMemberPod(ctx, c, act.Pod, podVersion, "existing", member.InitialCluster(c, append(obs.Members, m), act.Pod)); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionPromote:
		if err := obs.etcd.Promote(ctx, act.MemberID); err != nil {
			if errors.Is(err, cluster.ErrLearnerNotReady) {
				log.V(1).Info("Learner not in sync yet")
				return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
			}
			return ctrl.Result{}, fmt.Errorf("promoting %s of %s: %w", act.Pod, klog.KObj(c), err)
		}
		r.Failpoint(FailpointAfterPromote)
	case cluster.ActionRemoveMember:
		err := obs.etcd.Remove(ctx, act.MemberID)
		if errors.Is(err, cluster.ErrNotReadyForChange) {
			log.V(1).Info("Cluster not ready for a membership change yet")
			return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("removing member %s of %s: %w", act.Pod, klog.KObj(c), err)
		}
		r.Failpoint(FailpointAfterMemberRemove)
		if err := r.deleteMember(ctx, c, obs, act.Pod, true); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionReplaceMember:
		err := r.replaceMember(ctx, c, obs, act)
		if errors.Is(err, cluster.ErrNotReadyForChange) {
			log.V(1).Info("Cluster not ready for a membership change yet")
			return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionDeletePod:
		if err := r.deleteMember(ctx, c, obs, act.Pod, true); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionDeleteFailed:
		if err := r.deleteMember(ctx, c, obs, act.Pod, false); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionUpgradeMember:
		if err := r.upgradeMember(ctx, c, obs.pods[act.Pod], act.Version); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionEnableDowngrade:
		if err := obs.etcd.EnableDowngrade(ctx, member.ClientURL(c, act.Pod), act.Version); err != nil {
			return ctrl.Result{}, fmt.Errorf("downgrading %s: %w", klog.KObj(c), err)
		}
	case cluster.ActionCancelDowngrade:
		if err := obs.etcd.CancelDowngrade(ctx, member.ClientURL(c, act.Pod)); err != nil {
			return ctrl.Result{}, fmt.Errorf("upgrading %s: %w", klog.KObj(c), err)
		}
	case cluster.ActionRollBlocked:
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	case cluster.ActionMoveLeader:
		if err := obs.etcd.MoveLeader(ctx, member.ClientURL(c, act.Pod), act.MemberID); err != nil {
			return ctrl.Result{}, fmt.Errorf("rolling %s: %w", klog.KObj(c), err)
		}
	case cluster.ActionRollMember:
		if err := r.recordRecreateVersion(ctx, c, obs, act); err != nil {
			return ctrl.Result{}, err
		}
		evicted, err := r.evictMember(ctx, c, obs.pods[act.Pod])
		if err != nil {
			return ctrl.Result{}, err
		}
		if !evicted {
			log.Info("The PodDisruptionBudget does not allow evicting the member now")
			return ctrl.Result{RequeueAfter: requeueEtcdWait}, nil
		}
	}
	log.Info("Changed member")
	r.event(c, corev1.EventTypeNormal, string(act.Kind), act.Message)
	membershipChanges.WithLabelValues(c.Namespace, c.Name, string(act.Kind)).Inc()
	if act.Kind == cluster.ActionPromote {
		return ctrl.Result{RequeueAfter: requeueAfterPromote}, nil
	}
	return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
}

// waitInterval is when to look again at a cluster waiting for the member of pod p (nil: none):
// soon while its etcd has just started, requeueEtcdWait otherwise.
func waitInterval(p *corev1.Pod, now time.Time) time.Duration {
	if p == nil {
		return requeueEtcdWait
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == member.ContainerName && st.State.Running != nil && now.Sub(st.State.Running.StartedAt.Time) < justStarted {
			return requeueJustStarted
		}
	}
	return requeueEtcdWait
}
