package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// replaceMember replaces a voting member that stayed unhealthy while its peers are healthy
// (cluster.ActionReplaceMember), in the order that loses nothing if a pass stops half-way:
// its volume is marked replaced first (kept, listed in status.replacedVolumes, never a
// member's again), then the member is removed from the membership, then its pod is deleted.
// A pass after a stop between them finds the member still listed and replaces it again: the
// volume is marked already, the removal and the deletion follow. The next steps add a fresh
// member on a fresh volume under a new name.
func (r *Reconciler) replaceMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, act cluster.Action) error {
	volume := ""
	if pvc, ok := obs.pvcs[act.Pod]; ok {
		if err := r.markReplaced(ctx, c, pvc, act.MemberID); err != nil {
			return err
		}
		volume = pvc.Name
	}
	if err := obs.etcd.Remove(ctx, act.MemberID); err != nil {
		return fmt.Errorf("removing unhealthy member %s of %s: %w", act.Pod, klog.KObj(c), err)
	}
	msg := act.Message
	if volume != "" {
		msg += fmt.Sprintf("; volume %s is kept (status.replacedVolumes)", volume)
	}
	r.event(c, corev1.EventTypeWarning, etcdv1beta2.ReasonMemberReplaced, msg)
	return r.deleteMember(ctx, c, obs, act.Pod, false)
}

// markReplaced records on pvc, read again and still the same claim controlled by c, that its
// member was replaced: when, and the member ID (markVolume; an existing mark stays).
func (r *Reconciler) markReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster, observed *corev1.PersistentVolumeClaim, id uint64) error {
	return r.markVolume(ctx, c, observed.Name, observed.UID, map[string]string{
		etcdv1beta2.AnnotationReplacedAt:       r.Clock.Now().UTC().Format(time.RFC3339),
		etcdv1beta2.AnnotationReplacedMemberID: fmt.Sprintf("%x", id),
	})
}

// replacedVolumes lists the kept volumes of replaced members for status, with when each
// goes (spec.memberReplacement.volumeRetentionSeconds).
func replacedVolumes(c *etcdv1beta2.EtcdCluster, obs *observation) []etcdv1beta2.ReplacedVolume {
	var out []etcdv1beta2.ReplacedVolume
	for _, pvc := range obs.replaced {
		v := etcdv1beta2.ReplacedVolume{Name: pvc.Name, MemberID: pvc.Annotations[etcdv1beta2.AnnotationReplacedMemberID]}
		if at, ok := replacedAt(pvc); ok {
			v.ReplacedAt = &metav1.Time{Time: at}
			if keep, ok := c.ReplacedVolumeRetention(); ok {
				v.DeleteAfter = &metav1.Time{Time: at.Add(keep)}
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// expireReplaced deletes the kept volumes of replaced members whose retention has passed
// (still controlled by c, the same objects as observed), with an event for each. It reports
// how long until the next one is due (0: none).
func (r *Reconciler) expireReplaced(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (time.Duration, error) {
	keep, ok := c.ReplacedVolumeRetention()
	if !ok {
		return 0, nil
	}
	now := r.Clock.Now()
	var next time.Duration
	for _, pvc := range obs.replaced {
		at, ok := replacedAt(pvc)
		if !ok {
			continue // a mark a person edited: kept
		}
		if due := at.Add(keep).Sub(now); due > 0 {
			if next == 0 || due < next {
				next = due
			}
			continue
		}
		if err := r.deleteOwned(ctx, c, pvc, &corev1.PersistentVolumeClaim{}, "volume"); err != nil {
			return 0, err
		}
		r.event(c, corev1.EventTypeNormal, "ReplacedVolumeDeleted", fmt.Sprintf("Deleted volume %s of member %s, replaced at %s: spec.memberReplacement.volumeRetentionSeconds passed",
			pvc.Name, pvc.Annotations[etcdv1beta2.AnnotationReplacedMemberID], at.UTC().Format(time.RFC3339)))
	}
	return next, nil
}

func replacedAt(pvc *corev1.PersistentVolumeClaim) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339, pvc.Annotations[etcdv1beta2.AnnotationReplacedAt])
	return at, err == nil
}
