package etcdcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/member"
)

// TestWaitInterval: a member whose etcd just started is looked at again within a second (it
// answers, catches up or gets a leader in about that time); one that has not started, or has
// run for a while without getting healthy, at the steady wait, so a stuck member is no hot loop.
func TestWaitInterval(t *testing.T) {
	now := time.Now()
	running := func(since time.Duration) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: member.ContainerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-since))}}}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want time.Duration
	}{
		{"no pod", nil, requeueEtcdWait},
		{"pending pod", &corev1.Pod{}, requeueEtcdWait},
		{"etcd started 2 s ago", running(2 * time.Second), requeueJustStarted},
		{"etcd started a minute ago", running(time.Minute), requeueEtcdWait},
	} {
		if got := waitInterval(tc.pod, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
