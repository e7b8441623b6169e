package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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
	// requeueQuorumLost keeps watching a cluster that lost quorum.
	requeueQuorumLost = 30 * time.Second
	// requeueSteady re-checks a healthy cluster: member health is not watchable.
	requeueSteady = 60 * time.Second
)

// apply carries out one step chosen by cluster.Next.
func (r *Reconciler) apply(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.Action, version string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("action", act.Kind, "member", act.Pod)
	switch act.Kind {
	case cluster.ActionNone:
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	case cluster.ActionWait, cluster.ActionWaitForSeed:
		return ctrl.Result{RequeueAfter: requeueEtcdWait}, nil
	case cluster.ActionQuorumLost:
		return ctrl.Result{RequeueAfter: requeueQuorumLost}, nil
	case cluster.ActionCreateSeed:
		if err := r.createMemberPod(ctx, c, act.Pod, version, "new", act.Pod+"="+member.PeerURL(c, act.Pod)); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionCreatePod, cluster.ActionRecreatePod:
		if act.Kind == cluster.ActionRecreatePod {
			if going, err := r.volumeGoing(ctx, c, act.Pod); err != nil || going {
				log.V(1).Info("Not recreating a member on a volume that is being deleted", "error", err)
				return ctrl.Result{RequeueAfter: requeueAfterChange}, err
			}
		}
		state := "existing"
		if !obs.Reachable && !obs.Formed {
			state = "new" // the seed's pod went away before the cluster formed; its volume stays
		}
		if err := r.createMemberPod(ctx, c, act.Pod, version, state, member.InitialCluster(c, obs.Members, act.Pod)); err != nil {
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
		if err := r.createMemberPod(ctx, c, act.Pod, version, "existing", member.InitialCluster(c, append(obs.Members, m), act.Pod)); err != nil {
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
		if err := r.deleteMember(ctx, c, act.Pod, true); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionDeletePod:
		if err := r.deleteMember(ctx, c, act.Pod, true); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionDeleteFailed:
		if err := r.deleteMember(ctx, c, act.Pod, false); err != nil {
			return ctrl.Result{}, err
		}
	case cluster.ActionUpgradeMember:
		if err := r.upgradeMember(ctx, c, obs.pods[act.Pod], act.Version); err != nil {
			return ctrl.Result{}, err
		}
	}
	log.Info("Changed member")
	r.event(c, corev1.EventTypeNormal, string(act.Kind), act.Message)
	membershipChanges.WithLabelValues(c.Namespace, c.Name, string(act.Kind)).Inc()
	return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
}

// createMemberPod creates the data volume (if the cluster uses them) and the pod of a member.
// AlreadyExists is success: a previous pass got there first.
func (r *Reconciler) createMemberPod(ctx context.Context, c *etcdv1beta2.EtcdCluster, name, version, state, initial string) error {
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		pvc := member.NewPVC(c, name)
		if err := controllerutil.SetControllerReference(c, pvc, r.Scheme()); err != nil {
			return fmt.Errorf("owning volume %s: %w", name, err)
		}
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating volume %s of %s: %w", name, klog.KObj(c), err)
		}
	}
	pod := member.NewPod(c, name, version, state, initial)
	if err := controllerutil.SetControllerReference(c, pod, r.Scheme()); err != nil {
		return fmt.Errorf("owning pod %s: %w", name, err)
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s of %s: %w", name, klog.KObj(c), err)
	}
	return nil
}

// volumeGoing reports whether the data volume of member name is gone or being deleted, read
// around the cache: a pod deleted together with its volume must not be recreated on it (the
// pod would hold the volume's deletion, and the member's data is being thrown away anyway).
func (r *Reconciler) volumeGoing(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) (bool, error) {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return false, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, pvc)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting volume %s of %s: %w", name, klog.KObj(c), err)
	}
	return pvc.DeletionTimestamp != nil, nil
}

// deleteMember deletes a member's pod and, with withVolume, its data volume.
func (r *Reconciler) deleteMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, withVolume bool) error {
	meta := metav1.ObjectMeta{Name: name, Namespace: c.Namespace}
	if err := r.Delete(ctx, &corev1.Pod{ObjectMeta: meta}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s of %s: %w", name, klog.KObj(c), err)
	}
	if !withVolume || c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	if err := r.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: meta}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting volume %s of %s: %w", name, klog.KObj(c), err)
	}
	return nil
}

// adoptSeed makes the cluster the controller owner of the restore operator's seed pod and of
// its data volume, so that deleting the cluster deletes them like any other member's.
func (r *Reconciler) adoptSeed(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) error {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return nil
	}
	p, ok := obs.pods[c.Spec.Bootstrap.Restore.SeedMember]
	if !ok || metav1.GetControllerOf(p) != nil {
		return nil
	}
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: p.Name}, pvc)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("getting seed volume %s: %w", p.Name, err)
		}
		if err == nil && metav1.GetControllerOf(pvc) == nil {
			if err := r.adopt(ctx, c, pvc); err != nil {
				return err
			}
		}
	}
	if err := r.adopt(ctx, c, p); err != nil {
		return err
	}
	r.event(c, corev1.EventTypeNormal, "AdoptedSeed", "adopted seed member "+p.Name+" of restore "+c.Spec.Bootstrap.Restore.RestoreName)
	return nil
}

// adopt makes c the controller owner of obj.
func (r *Reconciler) adopt(ctx context.Context, c *etcdv1beta2.EtcdCluster, obj client.Object) error {
	before := obj.DeepCopyObject().(client.Object)
	if err := controllerutil.SetControllerReference(c, obj, r.Scheme()); err != nil {
		return fmt.Errorf("owning %s: %w", obj.GetName(), err)
	}
	if err := r.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("adopting %s of %s: %w", obj.GetName(), klog.KObj(c), err)
	}
	return nil
}
