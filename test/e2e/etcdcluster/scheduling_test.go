//go:build e2e

package etcdcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestSchedulingPolicy (issue 18 item 6): a cluster with a priority class, a toleration and a
// spread constraint without a selector runs; its pods carry them, the constraint selecting the
// cluster's own members, and the scheduler placed them (one node: ScheduleAnyway).
func TestSchedulingPolicy(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-sched")
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-etcd"}, Value: 100000}
	f.Create(t, pc)
	t.Cleanup(func() { _ = f.Client.Delete(context.Background(), pc) })
	c := newCluster(ns, "c", 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{
		PriorityClassName: pc.Name,
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway},
		},
	}
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	for _, p := range memberPods(t, f, ns, "c") {
		s := p.Spec
		if s.PriorityClassName != pc.Name || s.Priority == nil || *s.Priority != pc.Value || len(s.Tolerations) == 0 ||
			len(s.TopologySpreadConstraints) != 1 || s.TopologySpreadConstraints[0].LabelSelector.MatchLabels["etcd_cluster"] != "c" || s.NodeName == "" {
			t.Fatalf("pod %s: priority %q/%v constraints %+v node %q", p.Name, s.PriorityClassName, s.Priority, s.TopologySpreadConstraints, s.NodeName)
		}
	}
}
