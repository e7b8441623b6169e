package etcdrestore

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// defaultStuckAfter is how long past its deletion deadline (deletion timestamp: the request
// plus its grace period) a pod of the replaced cluster counts as stuck. A kubelet that runs
// confirms a stop within seconds; one that does not is on a node that is gone or cut off, and
// its pods stay Terminating until the node controller or a person removes them.
const defaultStuckAfter = 30 * time.Second

// stuckPods handles, while an in-place restore waits for the replaced cluster old to be
// deleted, the pods old controls that stay Terminating: it records them in the OldPodsStuck
// condition and a Warning event, and with the AnnotationForceDeleteStuckPods opt-in it
// force-deletes them (only those, each with a UID precondition). It returns the wait message.
func (r *Reconciler) stuckPods(ctx context.Context, rs *etcdv1beta2.EtcdRestore, old *etcdv1beta2.EtcdCluster) (string, error) {
	wait := "waiting for the old EtcdCluster " + old.Name + " to be deleted"
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(old.Namespace), client.MatchingLabels{member.LabelCluster: old.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of EtcdCluster %s: %w", old.Name, err)
	}
	after := r.StuckAfter
	if after == 0 {
		after = defaultStuckAfter
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
		msg := fmt.Sprintf("pods of the replaced EtcdCluster %s stay Terminating: %s. Their nodes do not confirm they stopped (a node that is gone never does). Once you have made sure those nodes are gone, annotate this EtcdRestore with %s=true to force-delete them", old.Name, list, etcdv1beta2.AnnotationForceDeleteStuckPods)
		if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck); c == nil || c.Message != msg {
			r.Recorder.Event(rs, corev1.EventTypeWarning, etcdv1beta2.RestoreConditionOldPodsStuck, msg)
		}
		r.setCondition(rs, etcdv1beta2.RestoreConditionOldPodsStuck, metav1.ConditionTrue, "PodsTerminating", msg)
		return wait + ": " + msg, nil
	}
	for _, p := range stuck {
		uid := p.UID
		err := r.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return "", fmt.Errorf("force-deleting stuck pod %s of the replaced EtcdCluster %s: %w", p.Name, old.Name, err)
		}
	}
	msg := fmt.Sprintf("force-deleted the stuck pods of the replaced EtcdCluster %s (%s=true): %s", old.Name, etcdv1beta2.AnnotationForceDeleteStuckPods, list)
	r.Recorder.Event(rs, corev1.EventTypeWarning, "StuckPodsForceDeleted", msg)
	r.setCondition(rs, etcdv1beta2.RestoreConditionOldPodsStuck, metav1.ConditionTrue, "ForceDeleted", msg)
	return wait + ": " + msg, nil
}
