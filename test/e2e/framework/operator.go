//go:build e2e

package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EtcdOperatorLease is the leader-election Lease of the etcd operator.
const EtcdOperatorLease = "etcd-operator.etcd.database.coreos.com"

// OperatorRestarts sums the container restarts of the pods of an operator Deployment.
func (f *Framework) OperatorRestarts(ctx context.Context, deployment string) (int32, error) {
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": deployment}); err != nil {
		return 0, err
	}
	var n int32
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n, nil
}

// SetEtcdOperatorEnv sets (NAME=value) or removes (NAME-) an environment variable of the etcd
// operator's Deployment, e.g. ETCD_OPERATOR_FAILPOINT, and returns once the new pod alone runs
// and holds the leader Lease.
func (f *Framework) SetEtcdOperatorEnv(t testing.TB, assignment string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, _, err := f.Kubectl(ctx, "-n", OperatorNamespace, "set", "env", "deployment/etcd-operator", assignment); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Kubectl(ctx, "-n", OperatorNamespace, "rollout", "status", "deployment/etcd-operator", "--timeout=150s"); err != nil {
		t.Fatal(err)
	}
	// The rollout is done when the new pod is ready, but the old one may still lead (and act on
	// a scale) while it terminates: wait until only the new pod is left and it holds the Lease.
	Eventually(t, 2*time.Minute, "the new etcd-operator pod to lead alone", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := f.Client.List(ctx, pods, client.InNamespace(OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator"}); err != nil {
			return false, err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Errorf("%d etcd-operator pods", len(pods.Items))
		}
		lease := &coordinationv1.Lease{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: EtcdOperatorLease}, lease); err != nil {
			return false, err
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		return strings.HasPrefix(holder, pods.Items[0].Name), fmt.Errorf("lease held by %q, pod %s", holder, pods.Items[0].Name)
	})
}
