package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// bootstrapMembers are the members c is restored into at once: bootstrap.restore.members, or
// the seed member alone (a cluster made before members existed; the etcd operator adds the
// others through raft).
func bootstrapMembers(c *etcdv1beta2.EtcdCluster) []string {
	b := c.Spec.Bootstrap.Restore
	if len(b.Members) > 0 {
		return b.Members
	}
	return []string{b.SeedMember}
}

// formed reports whether the members restored into c have formed a cluster that may serve
// writes: the etcd operator recorded its cluster ID, or a quorum of them runs (or ran) etcd on
// the restored data. From then on no member that runs etcd is stopped, whatever happens to the
// restore: a client may have written to it.
func formed(c *etcdv1beta2.EtcdCluster, ms restoreboot.Members) bool {
	return c.Status.ClusterID != "" || ms.QuorumStarted()
}

// restoringMembers reads the pod of every member rs restores c into. While the cluster has not
// formed, a member without a pod gets its pod (and volume) if create is set, and a pod at a
// member's name that rs did not create fails the restore with SeedConflict (the etcd operator
// creates nothing before then). Once it formed, the members are the etcd operator's: a missing
// one is its to replace, and a pod it made is not looked at.
func (r *Reconciler) restoringMembers(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, create bool) (restoreboot.Members, error) {
	names := bootstrapMembers(c)
	ms := make(restoreboot.Members, 0, len(names))
	var missing []*restoreboot.Member
	var foreign []*corev1.Pod
	for _, name := range names {
		pod := &corev1.Pod{}
		err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: name}, pod)
		switch {
		case apierrors.IsNotFound(err):
			m := restoreboot.NewMember(name, nil)
			ms = append(ms, m)
			missing = append(missing, m)
			continue
		case err != nil:
			return nil, fmt.Errorf("getting the pod of member %s: %w", name, err)
		}
		if !seedOf(pod, rs, c) {
			foreign = append(foreign, pod)
			ms = append(ms, restoreboot.NewMember(name, nil))
			continue
		}
		ms = append(ms, restoreboot.NewMember(name, pod))
	}
	if !create || formed(c, ms) {
		return ms, nil
	}
	if len(foreign) > 0 {
		return nil, seedConflict("pod", foreign[0])
	}
	for _, m := range missing {
		if err := r.createSeed(ctx, rs, c, m.Name, names); err != nil {
			return nil, err
		}
		m.Created = true
	}
	return ms, nil
}

// stopFailed deals with members whose restore step failed for good; the kubelet would retry
// them forever. Before the cluster formed (no cluster ID and no quorum running etcd on the
// restored data), nothing serves anything yet: every member's pod is stopped and the restore
// fails (the cluster is left memberless, as a failed seed always left it). Should a member fail
// after it formed, the members that run hold the data and may hold writes: only the failed
// member's pod is stopped, and the etcd operator replaces that member from them, as it would
// any member lost after a restore.
func (r *Reconciler) stopFailed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, ms restoreboot.Members) error {
	failed := ms.FirstFailed()
	if failed == nil {
		return nil
	}
	if formed(c, ms) {
		for _, m := range ms {
			if !m.Failed() {
				continue
			}
			if err := r.stopSeed(ctx, rs, c, m.Pod); err != nil {
				return err
			}
			r.Recorder.Eventf(rs, corev1.EventTypeWarning, m.Res.Reason, "Member %s could not restore the backup (%s); its pod was deleted and the etcd operator replaces the member from the members that run on the restored data", m.Name, m.Res.Message)
		}
		return nil
	}
	if err := r.stopAll(ctx, rs, c, ms); err != nil {
		return err
	}
	return reason.Errorf(failed.Res.Reason, "member %s could not restore the backup: %s", failed.Name, failed.Res.Message)
}

// stopAll stops the pod of every member of ms: only for a cluster that has not formed.
func (r *Reconciler) stopAll(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, ms restoreboot.Members) error {
	for _, m := range ms {
		if m.Pod != nil {
			if err := r.stopSeed(ctx, rs, c, m.Pod); err != nil {
				return err
			}
		}
	}
	return nil
}
