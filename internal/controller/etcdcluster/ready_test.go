package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// kstatus is the Ready, Reconciling and Stalled conditions of c as "Ready=False/Reason
// Reconciling=True/Reason Stalled=<none>", after checking that every one present and
// status.observedGeneration are of c's generation (kstatus trusts nothing else).
func kstatus(c *etcdv1beta2.EtcdCluster) (string, error) {
	if c.Status.ObservedGeneration != c.Generation {
		return "", fmt.Errorf("status.observedGeneration %d, generation %d", c.Status.ObservedGeneration, c.Generation)
	}
	out := ""
	for _, typ := range []string{etcdv1beta2.ConditionReady, etcdv1beta2.ConditionReconciling, etcdv1beta2.ConditionStalled} {
		if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond != nil && cond.ObservedGeneration != c.Generation {
			return "", fmt.Errorf("%s is of generation %d, the cluster's is %d", typ, cond.ObservedGeneration, c.Generation)
		}
		if out != "" {
			out += " "
		}
		out += typ + "=" + condition(c, typ)
	}
	return out, nil
}

// waitKstatus waits until the cluster's Ready, Reconciling and Stalled read want.
func waitKstatus(t *testing.T, ns, want string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, want, testutil.NoError(func() error {
		got, err := kstatus(getCluster(t, ns, "c"))
		if err == nil && got != want {
			err = fmt.Errorf("got %s", got)
		}
		return err
	}))
}

// TestReadyWhileCreatingAndPaused: a cluster whose pods never run is Ready=False and
// Reconciling (the operator is still creating it); paused, it is Ready=False PausedByUser and
// neither Reconciling nor Stalled.
func TestReadyWhileCreatingAndPaused(t *testing.T) {
	ns := namespace(t, "nokubelet-ready")
	if err := k8s.Create(context.Background(), newCluster(ns, "c", 3)); err != nil {
		t.Fatal(err)
	}
	waitKstatus(t, ns, "Ready=False/EtcdUnreachable Reconciling=True/EtcdUnreachable Stalled=<none>")
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = true })
	waitKstatus(t, ns, "Ready=False/PausedByUser Reconciling=<none> Stalled=<none>")
}

// TestReadyFollowsTheCluster: Ready turns True once all members run, follows a spec change
// (observedGeneration), and turns False with Stalled when quorum is lost.
func TestReadyFollowsTheCluster(t *testing.T) {
	ns, f := grown(t, "ready", 3)
	waitKstatus(t, ns, "Ready=True/ClusterHealthy Reconciling=<none> Stalled=<none>")
	if msg := meta.FindStatusCondition(getCluster(t, ns, "c").Status.Conditions, "Ready").Message; msg != "3 of 3 members ready, running etcd 3.6.16" {
		t.Errorf("Ready message %q", msg)
	}

	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 1 })
	waitConverged(t, ns, f, 1)
	waitKstatus(t, ns, "Ready=True/ClusterHealthy Reconciling=<none> Stalled=<none>")
	if c := getCluster(t, ns, "c"); c.Generation < 2 {
		t.Fatalf("generation %d after a spec change", c.Generation)
	}

	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 3 })
	waitConverged(t, ns, f, 3)
	names := memberNames(f, true)
	f.kill(names[1], names[2])
	waitKstatus(t, ns, "Ready=False/QuorumLost Reconciling=<none> Stalled=True/QuorumLost")
}
