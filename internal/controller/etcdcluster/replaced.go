package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// replacedGracePeriod is how long the pods of a cluster replaced by an in-place restore get to
// stop. Their data is either on the volumes the restore keeps (etcd is crash-safe) or about to
// be gone with the pods; a graceful etcd stop would only try, for up to about 7 s, to hand
// leadership to members that are stopping too.
const replacedGracePeriod = 1

// stopReplaced, for a cluster being deleted that an EtcdRestore replaces in place
// (AnnotationReplacedBy), retains its volumes if they are not yet (the restore waits for that
// before it deletes the cluster; this is the second line) and deletes its member pods with a
// short grace period; the garbage collector would delete them with their own. Pods that stay
// Terminating are force-deleted only with the person's opt-in (forceDeleteStuck). Only pods c
// controls (by UID), each with a UID precondition. Nothing else of a deleted cluster is
// touched. It reports when to look again (0: nothing left to do).
func (r *Reconciler) stopReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster) (time.Duration, error) {
	if c.Annotations[etcdv1beta2.AnnotationReplacedBy] == "" {
		return 0, nil
	}
	if err := r.retainReplaced(ctx, c); err != nil {
		return 0, err
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return 0, fmt.Errorf("listing the pods of the replaced %s: %w", klog.KObj(c), err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !controlledBy(p, c) || (p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds <= replacedGracePeriod) {
			continue
		}
		uid := p.UID
		err := r.Delete(ctx, p, client.GracePeriodSeconds(replacedGracePeriod), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("stopping pod %s of the replaced %s: %w", p.Name, klog.KObj(c), err)
		}
	}
	return r.forceDeleteStuck(ctx, c, pods.Items)
}
