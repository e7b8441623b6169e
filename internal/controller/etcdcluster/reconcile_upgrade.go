package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// runningVersion is the lowest etcd version among the member pods' images and the versions
// the members report (a patched pod reports its old version until its container restarts),
// or "" without pods.
func runningVersion(obs *observation) string {
	lowest := ""
	see := func(v string) {
		if v != "" && (lowest == "" || cluster.CompareVersions(v, lowest) < 0) {
			lowest = v
		}
	}
	for _, p := range obs.Pods {
		see(p.Version)
	}
	for _, s := range obs.Status {
		see(s.Version)
	}
	return lowest
}

// targetVersion decides the version members should run: spec.version when the change from the
// running version is a supported path, otherwise the running version (nothing changes) and the
// reason the change is refused.
func targetVersion(c *etcdv1beta2.EtcdCluster, obs *observation) (string, error) {
	want := c.Spec.EtcdVersion()
	running := runningVersion(obs)
	if err := cluster.CheckUpgrade(running, want); err != nil {
		return running, err
	}
	return want, nil
}

// upgradeMember moves one member to version by patching its container image in place: the
// kubelet restarts the container with the new image and the member keeps its data (emptyDir
// survives container restarts) and its identity. The planner only picks a member when every
// member is healthy and on its pod's version, followers before the leader.
// The pod is read again around the cache and patched only if it is still the one observed and
// controlled by c (the patch carries its resourceVersion).
func (r *Reconciler) upgradeMember(ctx context.Context, c *etcdv1beta2.EtcdCluster, observed *corev1.Pod, version string) error {
	if observed == nil {
		return nil
	}
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(observed), pod); err != nil {
		return fmt.Errorf("getting pod %s of %s: %w", observed.Name, klog.KObj(c), err)
	}
	if pod.UID != observed.UID || !controlledBy(pod, c) {
		return notOwned("pod", pod, c)
	}
	spec := c.Spec
	spec.Version = version
	before := pod.DeepCopy()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == member.ContainerName {
			pod.Spec.Containers[i].Image = spec.Image()
		}
	}
	if err := r.Patch(ctx, pod, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("upgrading pod %s of %s to %s: %w", pod.Name, klog.KObj(c), version, err)
	}
	return nil
}
