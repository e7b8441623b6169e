//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestFailpointAfterMemberAdd: the operator process exits right after MemberAddAsLearner,
// before the new member's pod exists (ETCD_OPERATOR_FAILPOINT=after-member-add). The restarted
// operator finds the added member without a pod, creates it, promotes it: the cluster
// converges with no stray member. Not parallel: it restarts the shared operator.
func TestFailpointAfterMemberAdd(t *testing.T) {
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-failpoint")
	f.Create(t, newCluster(ns, "c", 1))
	waitAvailable(t, f, ns, "c", 1, 5*time.Minute)

	f.SetEtcdOperatorEnv(t, "ETCD_OPERATOR_FAILPOINT=after-member-add")
	t.Cleanup(func() { f.SetEtcdOperatorEnv(t, "ETCD_OPERATOR_FAILPOINT-") })
	restarts, err := f.OperatorRestarts(context.Background(), "etcd-operator")
	if err != nil {
		t.Fatal(err)
	}
	scale(t, f, ns, "c", 2)
	framework.Eventually(t, 2*time.Minute, "the operator to exit at the failpoint", func(ctx context.Context) (bool, error) {
		n, err := f.OperatorRestarts(ctx, "etcd-operator")
		if err != nil {
			return false, err
		}
		return n > restarts, fmt.Errorf("restarts %d", n)
	})
	// Still armed: convergence must not need another member add.
	waitAvailable(t, f, ns, "c", 2, 5*time.Minute)
	checkMembers(t, f, nil, "http", ns, "c", 2, "", "")
}
