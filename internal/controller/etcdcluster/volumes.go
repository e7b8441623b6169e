package etcdcluster

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// volumeStepKind is what the volume expansion did in a pass.
type volumeStepKind string

// Volume steps; the zero kind means every volume is as the spec asks.
const (
	// volumeExpanding: this pass asked for one member's volume to grow.
	volumeExpanding volumeStepKind = "ExpandingVolume"
	// volumeResizing: a volume's resize is under way (or waits on its pod); nothing else grows.
	volumeResizing volumeStepKind = "VolumeResizing"
	// volumeUnsupported: the API server refused the larger request (the StorageClass does not
	// allow expansion, or the claim was not dynamically provisioned).
	volumeUnsupported volumeStepKind = "VolumeExpansionUnsupported"
	// volumeShrink: the spec asks for less than a member's volume has. (Admission cannot
	// compare the quantities within the CEL cost budget of corev1's unbounded request map.)
	volumeShrink volumeStepKind = "VolumeShrink"
)

type volumeStep struct {
	kind volumeStepKind
	msg  string
}

// expandVolumes grows the members' data volumes to the spec's storage request, one volume at a
// time: it asks for the next volume only after the previous one reports the new capacity. The
// kubelet and the CSI driver grow the file system while the pod runs (online expansion); a
// claim with FileSystemResizePending waits for its pod's restart, which the operator does not
// force. Volumes never shrink (admission refuses a smaller request).
func (r *Reconciler) expandVolumes(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (volumeStep, error) {
	if !usesPVC(c) {
		return volumeStep{}, nil
	}
	want, ok := c.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return volumeStep{}, nil
	}
	names := make([]string, 0, len(obs.pvcs))
	for name := range obs.pvcs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pvc := obs.pvcs[name]
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		capacity, known := pvc.Status.Capacity[corev1.ResourceStorage]
		switch {
		case req.Cmp(want) > 0:
			return volumeStep{kind: volumeShrink, msg: fmt.Sprintf("spec.pod.persistentVolumeClaimSpec.resources.requests.storage %s is below volume %s's %s: volumes cannot shrink; set it back to at least %s", want.String(), name, req.String(), req.String())}, nil
		case req.Cmp(want) < 0:
			return r.growVolume(ctx, c, pvc, want)
		case meta.IsStatusConditionTrue(pvcConditions(pvc), string(corev1.PersistentVolumeClaimFileSystemResizePending)):
			return volumeStep{kind: volumeResizing, msg: fmt.Sprintf("volume %s waits for its pod to restart to grow its file system to %s (the driver cannot grow it online); delete pod %s to finish", name, req.String(), name)}, nil
		case known && capacity.Cmp(req) < 0:
			return volumeStep{kind: volumeResizing, msg: fmt.Sprintf("volume %s is growing from %s to %s", name, capacity.String(), req.String())}, nil
		}
	}
	return volumeStep{}, nil
}

// growVolume asks for pvc to be want large, with the resourceVersion it was read at.
func (r *Reconciler) growVolume(ctx context.Context, c *etcdv1beta2.EtcdCluster, pvc *corev1.PersistentVolumeClaim, want resource.Quantity) (volumeStep, error) {
	from := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	grown := pvc.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = want
	err := r.Patch(ctx, grown, client.MergeFromWithOptions(pvc, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		return volumeStep{kind: volumeUnsupported, msg: fmt.Sprintf("volume %s cannot grow from %s to %s: %v", pvc.Name, from.String(), want.String(), err)}, nil
	case err != nil:
		return volumeStep{}, fmt.Errorf("growing volume %s of %s: %w", pvc.Name, klog.KObj(c), err)
	}
	ctrl.LoggerFrom(ctx).Info("Growing a member's volume", "volume", pvc.Name, "from", from.String(), "to", want.String())
	r.event(c, corev1.EventTypeNormal, string(volumeExpanding), fmt.Sprintf("volume %s: %s -> %s", pvc.Name, from.String(), want.String()))
	return volumeStep{kind: volumeExpanding, msg: fmt.Sprintf("growing volume %s from %s to %s", pvc.Name, from.String(), want.String())}, nil
}

// pvcConditions views a claim's conditions as metav1 conditions, for the meta helpers.
func pvcConditions(pvc *corev1.PersistentVolumeClaim) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(pvc.Status.Conditions))
	for _, cond := range pvc.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(cond.Type), Status: metav1.ConditionStatus(cond.Status)})
	}
	return out
}

// setVolumeConditions reports the pass's volume step: Progressing while a volume grows,
// Degraded (VolumeExpansionUnsupported) when the API server refuses to grow one.
func setVolumeConditions(c *etcdv1beta2.EtcdCluster, step volumeStep) {
	set := func(t string, status metav1.ConditionStatus, why, msg string) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: why, Message: msg, ObservedGeneration: c.Generation})
	}
	switch step.kind {
	case volumeExpanding, volumeResizing:
		set(etcdv1beta2.ClusterConditionProgressing, metav1.ConditionTrue, string(step.kind), step.msg)
	case volumeUnsupported, volumeShrink:
		why := etcdv1beta2.ReasonVolumeExpansionUnsupported
		if step.kind == volumeShrink {
			why = etcdv1beta2.ReasonInvalidSpec
		}
		if d := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded); d == nil || d.Status != metav1.ConditionTrue {
			set(etcdv1beta2.ClusterConditionDegraded, metav1.ConditionTrue, why, step.msg)
		}
	}
}
