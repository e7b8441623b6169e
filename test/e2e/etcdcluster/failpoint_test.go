//go:build e2e

package etcdcluster

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

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// operatorRestarts sums the container restarts of the etcd-operator pods.
func operatorRestarts(ctx context.Context, f *framework.Framework) (int32, error) {
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(framework.OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator"}); err != nil {
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

func setOperatorEnv(t testing.TB, f *framework.Framework, assignment string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, _, err := f.Kubectl(ctx, "-n", framework.OperatorNamespace, "set", "env", "deployment/etcd-operator", assignment); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Kubectl(ctx, "-n", framework.OperatorNamespace, "rollout", "status", "deployment/etcd-operator", "--timeout=150s"); err != nil {
		t.Fatal(err)
	}
	// The rollout is done when the new pod is ready, but the old one may still lead (and act on
	// a scale) while it terminates: wait until only the new pod is left and it holds the Lease.
	framework.Eventually(t, 2*time.Minute, "the new etcd-operator pod to lead alone", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := f.Client.List(ctx, pods, client.InNamespace(framework.OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator"}); err != nil {
			return false, err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Errorf("%d etcd-operator pods", len(pods.Items))
		}
		lease := &coordinationv1.Lease{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: "etcd-operator.etcd.database.coreos.com"}, lease); err != nil {
			return false, err
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		return strings.HasPrefix(holder, pods.Items[0].Name), fmt.Errorf("lease held by %q, pod %s", holder, pods.Items[0].Name)
	})
}

// TestFailpointAfterMemberAdd: the operator process exits right after MemberAddAsLearner,
// before the new member's pod exists (ETCD_OPERATOR_FAILPOINT=after-member-add). The restarted
// operator finds the added member without a pod, creates it, promotes it: the cluster
// converges with no stray member. Not parallel: it restarts the shared operator.
func TestFailpointAfterMemberAdd(t *testing.T) {
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-failpoint")
	f.Create(t, newCluster(ns, "c", 1))
	waitAvailable(t, f, ns, "c", 1, 5*time.Minute)

	setOperatorEnv(t, f, "ETCD_OPERATOR_FAILPOINT=after-member-add")
	t.Cleanup(func() { setOperatorEnv(t, f, "ETCD_OPERATOR_FAILPOINT-") })
	restarts, err := operatorRestarts(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	scale(t, f, ns, "c", 2)
	framework.Eventually(t, 2*time.Minute, "the operator to exit at the failpoint", func(ctx context.Context) (bool, error) {
		n, err := operatorRestarts(ctx, f)
		if err != nil {
			return false, err
		}
		return n > restarts, fmt.Errorf("restarts %d", n)
	})
	// Still armed: convergence must not need another member add.
	waitAvailable(t, f, ns, "c", 2, 5*time.Minute)
	checkMembers(t, f, nil, "http", ns, "c", 2, "", "")
}
