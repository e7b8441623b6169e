package etcdcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// nodeLostFor tells how long the node of pod p has been lost: its Ready condition not True since
// its last transition (the node controller turns it Unknown once the kubelet has been silent for
// its grace period). It reads only the nodes of pods that are not ready, at most once a pass
// (seen), around the cache (nodes are not watched: a cluster-wide informer for a rare fact). 0
// when the node is Ready, gone (PodGC then deletes the pod, and its member goes as one whose pod
// is gone), or cannot be read: an operator not allowed to read nodes (a namespaced install)
// waits for the taint manager's eviction as before.
func (r *Reconciler) nodeLostFor(ctx context.Context, p *corev1.Pod, now time.Time, seen map[string]time.Duration) time.Duration {
	if p.Spec.NodeName == "" || member.PodReady(p) {
		return 0
	}
	if d, ok := seen[p.Spec.NodeName]; ok {
		return d
	}
	var lost time.Duration
	n := &corev1.Node{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n)
	switch {
	case err == nil:
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue && !cond.LastTransitionTime.IsZero() {
				lost = max(now.Sub(cond.LastTransitionTime.Time), 0)
			}
		}
	case !apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot read the node of a member pod that is not ready; a lost node is noticed at its eviction", "node", p.Spec.NodeName, "error", err.Error())
	}
	seen[p.Spec.NodeName] = lost
	return lost
}
