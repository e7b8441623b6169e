//go:build e2e

package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
)

// PollInterval is how often the wait helpers re-check: slower than the unit tests' polling, as
// every check here is a call to a real cluster's apiserver.
const PollInterval = 500 * time.Millisecond

// callTimeout bounds one check of a condition, so a hung apiserver call cannot use up a
// wait's whole budget.
const callTimeout = 30 * time.Second

// Eventually calls cond every PollInterval until it returns true, and fails the test with desc
// and the last error or reason if that does not happen within timeout. cond returns (false, err)
// for "not yet, because err"; a cond that needs to stop early calls t.Fatal itself.
func Eventually(t testing.TB, timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := Poll(context.Background(), timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", desc, err)
	}
}

// Poll is Eventually without a test (hack/demo uses it): it returns nil once cond is true, or an
// error that carries the last reason cond gave when timeout or ctx ends first. It is
// poll.Until, the loop the unit tests wait with, with this package's slower interval and a
// deadline for each check; the e2e tests keep their own entry point only for those two.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return poll.Until(ctx, PollInterval, timeout, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return cond(ctx)
	})
}

// WaitForDeploymentAvailable waits for the Deployment's Available condition and all replicas
// updated and available.
func (f *Framework) WaitForDeploymentAvailable(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, "deployment "+ns+"/"+name+" Available", func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue &&
				d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("available %d/%d, updated %d", d.Status.AvailableReplicas, want, d.Status.UpdatedReplicas)
	})
}

// WaitForCRDEstablished waits for a CustomResourceDefinition's Established condition.
func (f *Framework) WaitForCRDEstablished(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, "CRD "+name+" Established", func(ctx context.Context) (bool, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := f.Client.Get(ctx, types.NamespacedName{Name: name}, &crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", crd.Status.Conditions)
	})
}

// WaitForPodReady waits for the pod's Ready condition and returns the pod.
func (f *Framework) WaitForPodReady(t testing.TB, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	Eventually(t, timeout, "pod "+ns+"/"+name+" Ready", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
			return false, err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, containers %s", pod.Status.Phase, containerStates(&pod))
	})
	return &pod
}

// WaitForPodSucceeded waits until the pod completed successfully; it fails at once when the
// pod fails (restartPolicy Never).
func (f *Framework) WaitForPodSucceeded(t testing.TB, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	Eventually(t, timeout, "pod "+ns+"/"+name+" Succeeded", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
			return false, err
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			t.Fatalf("pod %s/%s failed: %s", ns, name, containerStates(&pod))
		}
		return false, fmt.Errorf("phase %s, containers %s", pod.Status.Phase, containerStates(&pod))
	})
	return &pod
}

func containerStates(pod *corev1.Pod) string {
	s := ""
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			s += fmt.Sprintf("[%s waiting %s: %s restarts=%d]", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message, cs.RestartCount)
		case cs.State.Terminated != nil:
			s += fmt.Sprintf("[%s terminated %s exit=%d restarts=%d]", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.RestartCount)
		case cs.State.Running != nil:
			s += fmt.Sprintf("[%s running ready=%t restarts=%d]", cs.Name, cs.Ready, cs.RestartCount)
		}
	}
	return s
}
