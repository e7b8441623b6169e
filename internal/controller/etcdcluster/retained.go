package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// retainReplaced retains the volumes of c for the in-place restore about to delete it
// (restoreboot.RetainVolumes), with an event on each.
func (r *Reconciler) retainReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	retained, err := restoreboot.RetainVolumes(ctx, r.Client, r.APIReader, c)
	for _, pvc := range retained {
		r.eventOn(pvc, corev1.EventTypeNormal, "Retained", fmt.Sprintf("EtcdRestore %s replaces EtcdCluster %s: this volume is kept, with no owner, until the restored cluster is verified; if the restore fails or is deleted first, it stays", c.Annotations[etcdv1beta2.AnnotationReplacedByName], c.Name))
	}
	return err
}

// releaseRetained deletes the volumes retained for the restore that made c once it verified c
// (restoreboot.ReleaseVolumes).
func (r *Reconciler) releaseRetained(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	deleted, err := restoreboot.ReleaseVolumes(ctx, r.Client, r.Client, c)
	if len(deleted) > 0 {
		r.event(c, corev1.EventTypeNormal, "RetainedVolumesDeleted", fmt.Sprintf("EtcdRestore %s verified this cluster: deleted the replaced cluster's volumes %s", c.Spec.Bootstrap.Restore.RestoreName, strings.Join(deleted, ", ")))
	}
	return err
}

// forceDeleteStuck force-deletes, for a deleted cluster whose restore carries the person's
// opt-in, the pods c controls that stay Terminating (restoreboot.ForceDeleteStuck), with an
// event for each. It reports how long until the next pod would count as stuck.
func (r *Reconciler) forceDeleteStuck(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) (time.Duration, error) {
	after := r.StuckAfter
	if after == 0 {
		after = restoreboot.StuckAfter
	}
	deleted, next, err := restoreboot.ForceDeleteStuck(ctx, r.Client, c, pods, r.Clock.Now(), after)
	for _, p := range deleted {
		r.event(c, corev1.EventTypeWarning, "StuckPodForceDeleted", fmt.Sprintf("Force-deleted pod %s (node %s), Terminating since %s, as %s=true asks", p.Name, p.Spec.NodeName, p.DeletionTimestamp.UTC().Format(time.RFC3339), etcdv1beta2.AnnotationForceDeleteStuckPods))
	}
	return next, err
}
