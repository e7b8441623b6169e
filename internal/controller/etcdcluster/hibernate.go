package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// hibernate puts c to sleep (spec.hibernate): it stops every member pod c controls, all at
// once, and keeps everything else (the volumes, and with them the members' names, IDs and the
// cluster ID; the Services; the budget). No other step is taken while it sleeps. Waking is the
// ordinary path of a cluster on volumes whose pods are all gone: each member's pod is
// recreated on its volume (cluster.Next, RecreatePod). A cluster still being built from a
// backup is not put to sleep until its restore verified it.
func (r *Reconciler) hibernate(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (ctrl.Result, error) {
	set := func(t string, status bool, reason, msg string) {
		s := metav1.ConditionFalse
		if status {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
	}
	if restoring(c) {
		set(etcdv1beta2.ClusterConditionHibernated, false, etcdv1beta2.ReasonHibernating, "spec.hibernate waits for the restore to verify the cluster (condition Restored) before it stops the members")
		c.Status.Phase = phase(c)
		return ctrl.Result{RequeueAfter: requeueEtcdWait}, nil
	}
	var stopping []string
	for name, p := range obs.pods {
		stopping = append(stopping, name)
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := r.deleteOwned(ctx, c, p, &corev1.Pod{}, "pod"); err != nil {
			return ctrl.Result{}, err
		}
		r.event(c, corev1.EventTypeNormal, etcdv1beta2.ReasonHibernating, "Stopped member "+name+" for spec.hibernate; its volume keeps its data")
	}
	sort.Strings(stopping)
	set(etcdv1beta2.ClusterConditionAvailable, false, etcdv1beta2.ReasonHibernated, "spec.hibernate: the members are stopped, their volumes keep the data")
	set(etcdv1beta2.ClusterConditionDegraded, false, etcdv1beta2.ReasonAsExpected, "no problem found")
	if len(stopping) > 0 {
		msg := "stopping members " + strings.Join(stopping, ", ")
		set(etcdv1beta2.ClusterConditionHibernated, false, etcdv1beta2.ReasonHibernating, msg)
		set(etcdv1beta2.ClusterConditionProgressing, true, etcdv1beta2.ReasonHibernating, msg)
		c.Status.Phase = phase(c)
		return ctrl.Result{RequeueAfter: requeueAfterChange}, nil
	}
	msg := fmt.Sprintf("every member is stopped; %d volumes keep the data: set spec.hibernate to false to wake the cluster", len(obs.pvcs))
	set(etcdv1beta2.ClusterConditionHibernated, true, etcdv1beta2.ReasonHibernated, msg)
	set(etcdv1beta2.ClusterConditionProgressing, false, etcdv1beta2.ReasonHibernated, msg)
	c.Status.Phase = phase(c)
	return ctrl.Result{RequeueAfter: requeueSteady}, nil
}

// setAwake turns the Hibernated condition of a cluster that slept to False (Awake); a
// cluster that never slept gets none.
func setAwake(c *etcdv1beta2.EtcdCluster) {
	if c.Spec.Hibernate || meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionHibernated) == nil {
		return
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionHibernated, Status: metav1.ConditionFalse,
		Reason: etcdv1beta2.ReasonAwake, Message: "spec.hibernate is false: the members run on their volumes again", ObservedGeneration: c.Generation})
}
