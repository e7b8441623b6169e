package etcdcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestSpread: the Spread condition is True exactly when losing any one node keeps a quorum of
// the scheduled, running members, names the node otherwise, and is absent below three members.
func TestSpread(t *testing.T) {
	deleting := metav1.Now()
	pod := func(node string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}}
		if terminating {
			p.DeletionTimestamp = &deleting
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		pods   map[string]*corev1.Pod
		status metav1.ConditionStatus // "" for no condition
		msg    string                 // in the message
	}{
		{"one per node", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("b", false), "c-2": pod("c", false)}, metav1.ConditionTrue, "3 members on 3 nodes"},
		{"two of three on one node", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("b", false), "c-2": pod("b", false)}, metav1.ConditionFalse, "node b runs 2 of the 3 members (c-1, c-2)"},
		{"single node", map[string]*corev1.Pod{"c-0": pod("n", false), "c-1": pod("n", false), "c-2": pod("n", false)}, metav1.ConditionFalse, "at least 3 nodes"},
		{"five on three nodes, two at most", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("a", false), "c-2": pod("b", false), "c-3": pod("b", false), "c-4": pod("c", false)}, metav1.ConditionTrue, "at most 2 per node"},
		{"five, three on one node", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("a", false), "c-2": pod("a", false), "c-3": pod("b", false), "c-4": pod("c", false)}, metav1.ConditionFalse, "node a runs 3 of the 5 members"},
		{"terminating and unscheduled pods do not count", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("b", false), "c-2": pod("b", true), "c-3": pod("", false), "c-4": pod("c", false)}, metav1.ConditionTrue, "3 members on 3 nodes"},
		{"two members", map[string]*corev1.Pod{"c-0": pod("a", false), "c-1": pod("a", false)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{}
			// A stale condition from an earlier pass is replaced or removed.
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionSpread, Status: metav1.ConditionUnknown, Reason: "Stale"})
			setSpread(c, tc.pods)
			got := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionSpread)
			switch {
			case tc.status == "" && got != nil:
				t.Fatalf("condition %+v, want none", got)
			case tc.status == "":
			case got == nil || got.Status != tc.status || !strings.Contains(got.Message, tc.msg):
				t.Fatalf("condition %+v, want %s with %q", got, tc.status, tc.msg)
			}
		})
	}
}
