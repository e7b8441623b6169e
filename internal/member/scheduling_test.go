package member

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func TestMemberPodScheduling(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	own := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}
	c.Spec.Pod = &etcdv1beta2.PodPolicy{
		PriorityClassName: "etcd-critical",
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule},
			{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: own},
		},
	}
	spec := NewPod(c, "c-0", "3.6.16", "new", "c-0=http://c-0:2380").Spec
	// The policy's toleration first, then the emptyDir member's node-loss tolerations.
	if spec.PriorityClassName != "etcd-critical" || len(spec.Tolerations) != 3 || spec.Tolerations[0].Key != "dedicated" || len(spec.TopologySpreadConstraints) != 2 {
		t.Fatalf("pod spec %+v", spec)
	}
	zone, host := spec.TopologySpreadConstraints[0], spec.TopologySpreadConstraints[1]
	if zone.LabelSelector == nil || zone.LabelSelector.MatchLabels["etcd_cluster"] != "c" || zone.LabelSelector.MatchLabels["app"] != "etcd" {
		t.Fatalf("a constraint without a selector must select the cluster's members: %+v", zone.LabelSelector)
	}
	if host.LabelSelector.MatchLabels["tier"] != "db" || len(host.LabelSelector.MatchLabels) != 1 {
		t.Fatalf("a user's selector is kept as written: %+v", host.LabelSelector)
	}
	if c.Spec.Pod.TopologySpreadConstraints[0].LabelSelector != nil {
		t.Fatal("the spec was modified")
	}
	if s := NewPod(&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, "d-0", "3.6.16", "new", "").Spec; s.TopologySpreadConstraints != nil || s.PriorityClassName != "" {
		t.Fatalf("defaults: %+v %q", s.TopologySpreadConstraints, s.PriorityClassName)
	}
}
