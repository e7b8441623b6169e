package etcdrestore

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// stuckPods handles, while an in-place restore waits for the replaced cluster old to be
// deleted, the pods old controls that stay Terminating: it records them in the OldPodsStuck
// condition and a Warning event, and with the AnnotationForceDeleteStuckPods opt-in it copies
// that opt-in onto old: the etcd operator, which alone deletes pods, then force-deletes them
// (only those, each with a UID precondition). It returns the wait message.
func (r *Reconciler) stuckPods(ctx context.Context, rs *etcdv1beta2.EtcdRestore, old *etcdv1beta2.EtcdCluster) (string, error) {
	wait := "waiting for the old EtcdCluster " + old.Name + " to be deleted"
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(old.Namespace), client.MatchingLabels{member.LabelCluster: old.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of EtcdCluster %s: %w", old.Name, err)
	}
	after := r.StuckAfter
	if after == 0 {
		after = restoreboot.StuckAfter
	}
	var stuck []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if controlledBy(p, old.UID) && p.DeletionTimestamp != nil && r.now().Sub(p.DeletionTimestamp.Time) > after {
			stuck = append(stuck, p)
		}
	}
	if len(stuck) == 0 {
		if findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck) != nil {
			r.setCondition(rs, etcdv1beta2.RestoreConditionOldPodsStuck, metav1.ConditionFalse, "OldPodsGone", "no pod of the replaced cluster is stuck Terminating")
		}
		return wait, nil
	}
	desc := make([]string, 0, len(stuck))
	for _, p := range stuck {
		node := p.Spec.NodeName
		if node == "" {
			node = "no node"
		}
		desc = append(desc, fmt.Sprintf("%s (node %s, Terminating since %s)", p.Name, node, p.DeletionTimestamp.UTC().Format(time.RFC3339)))
	}
	list := strings.Join(desc, ", ")
	if rs.Annotations[etcdv1beta2.AnnotationForceDeleteStuckPods] != "true" {
		msg := fmt.Sprintf("pods of the replaced EtcdCluster %s stay Terminating: %s. Their nodes do not confirm they stopped (a node that is gone never does). Once you have made sure those nodes are gone, fence them with the taint %s=nodeshutdown:NoExecute (Kubernetes then deletes their pods), or annotate this EtcdRestore with %s=true to have them force-deleted", old.Name, list, corev1.TaintNodeOutOfService, etcdv1beta2.AnnotationForceDeleteStuckPods)
		if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck); c == nil || c.Message != msg {
			r.Recorder.Event(rs, corev1.EventTypeWarning, etcdv1beta2.RestoreConditionOldPodsStuck, msg)
		}
		r.setCondition(rs, etcdv1beta2.RestoreConditionOldPodsStuck, metav1.ConditionTrue, "PodsTerminating", msg)
		return wait + ": " + msg, nil
	}
	// The etcd operator force-deletes them: only pods the replaced cluster controls, stuck.
	if err := r.annotate(ctx, old, map[string]string{etcdv1beta2.AnnotationForceDeleteStuckPods: "true"}); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("the etcd operator force-deletes the stuck pods of the replaced EtcdCluster %s (%s=true): %s", old.Name, etcdv1beta2.AnnotationForceDeleteStuckPods, list)
	if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck); c == nil || c.Message != msg {
		r.Recorder.Event(rs, corev1.EventTypeWarning, "StuckPodsForceDeleted", msg)
	}
	r.setCondition(rs, etcdv1beta2.RestoreConditionOldPodsStuck, metav1.ConditionTrue, "ForceDeleted", msg)
	return wait + ": " + msg, nil
}
