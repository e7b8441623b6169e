//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The etcd versions of the upgrade kind: the 3.5 release hack/images.sh builds for upgrade
// tests, and the default.
const (
	upgradeFrom = "3.5.35"
	upgradeTo   = etcdv1beta2.DefaultEtcdVersion
)

// operatorKilledAfterMemberAdd arms the etcd operator's failpoint after-member-add
// (ETCD_OPERATOR_FAILPOINT: the process exits right after MemberAddAsLearner, before the new
// member's pod exists) and scales 3 -> 5. Each member add kills the operator once; the
// restarted operator (still armed) must find the member without a pod, create the pod and
// promote it, and never add a member twice. Heal counts from the first exit.
func operatorKilledAfterMemberAdd(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	return failpointDuring(t, f, ns, "after-member-add", 5, func() { resize(t, f, ns, 5) })
}

// operatorKilledAfterPromote arms the failpoint after-promote (the process exits right after
// MemberPromote, before the promotion is recorded) and scales 3 -> 5: each promotion kills
// the operator once. The restarted operator must take the voter as it is and go on.
func operatorKilledAfterPromote(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	return failpointDuring(t, f, ns, "after-promote", 5, func() { resize(t, f, ns, 5) })
}

// operatorKilledAfterMemberRemove arms the failpoint after-member-remove (the process exits
// right after MemberRemove, before the member's pod is deleted) and kills a seeded member's
// pod (emptyDir: its data is gone). The operator removes the dead member and exits; the
// restarted operator must add the replacement, with no stray or zombie member.
func operatorKilledAfterMemberRemove(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	return failpointDuring(t, f, ns, "after-member-remove", 3, func() {
		pods := memberPods(t, f, ns)
		forceDelete(t, f, ns, pods[rng.IntN(len(pods))].Name)
	})
}

// failpointDuring arms the etcd operator's failpoint, does what makes the operator reach it,
// waits for the first exit there and for the cluster healed at size. Heal counts from the
// first exit.
func failpointDuring(t *testing.T, f *framework.Framework, ns, failpoint string, size int32, do func()) injected {
	armFailpoint(t, f, failpoint)
	before := operatorRestarts(t, f)
	do()
	killed := waitOperatorExit(t, f, before)
	t.Logf("fault: the etcd operator exited at %s", failpoint)
	waitHealed(t, f, ns, int(size))
	return injected{size: size, over: killed, note: fmt.Sprintf("the operator exited %d times at %s", operatorRestarts(t, f)-before, failpoint)}
}

// operatorKilledBeforePromote scales 3 -> 5 and kills the etcd operator's pod as soon as a
// learner's pod exists: after the pod was created, before the learner was promoted (a learner
// takes seconds to catch up, so the kill lands there). The next operator promotes it.
func operatorKilledBeforePromote(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	resize(t, f, ns, 5)
	var learner string
	framework.Eventually(t, 3*time.Minute, "a learner with a pod", func(ctx context.Context) (bool, error) {
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return false, err
		}
		pods := listMembers(f, ns)
		for _, m := range ml.Members {
			if m.IsLearner && slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == m.Name }) {
				learner = m.Name
				return true, nil
			}
		}
		return false, fmt.Errorf("no learner with a pod yet")
	})
	killOperatorNow(t, f, "etcd-operator")
	killed := time.Now()
	where := "after the pod of learner " + learner + " was created, before its promotion"
	if !isLearner(t, cli, learner) {
		where = "after learner " + learner + " was promoted (the kill came late)"
	}
	t.Logf("fault: the etcd operator killed %s", where)
	f.WaitForDeploymentAvailable(t, framework.OperatorNamespace, "etcd-operator", 3*time.Minute)
	waitHealed(t, f, ns, 5)
	return injected{size: 5, over: killed, note: "killed " + where}
}

// operatorKilledMidUpgrade upgrades a 3.5 cluster to 3.6 and kills the etcd operator's pod once
// the first member's pod runs the new image. The next operator must finish the rolling upgrade,
// one member at a time: every member on the new version, none lost.
func operatorKilledMidUpgrade(t *testing.T, f *framework.Framework, ns string, _ *rand.Rand) injected {
	patchSpec(t, f, ns, func(s *etcdv1beta2.ClusterSpec) { s.Version = upgradeTo })
	var first string
	framework.Eventually(t, 3*time.Minute, "a member pod on "+upgradeTo, func(context.Context) (bool, error) {
		for _, p := range listMembers(f, ns) {
			if p.Spec.Containers[0].Image == framework.EtcdImage(upgradeTo) {
				first = p.Name
				return true, nil
			}
		}
		return false, fmt.Errorf("no member pod on %s yet", upgradeTo)
	})
	killOperatorNow(t, f, "etcd-operator")
	killed := time.Now()
	t.Logf("fault: the etcd operator killed once %s ran %s", first, upgradeTo)
	f.WaitForDeploymentAvailable(t, framework.OperatorNamespace, "etcd-operator", 3*time.Minute)
	waitAllOn(t, f, ns, upgradeTo)
	waitHealed(t, f, ns, 3)
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed once %s ran %s; upgrade finished %s after the kill", first, upgradeTo, time.Since(killed).Round(100*time.Millisecond))}
}

// memberLostMidDowngrade downgrades a 3.6 cluster without volumes to 3.5 and, once etcd reports
// the downgrade enabled, force-deletes the pod of a member still on 3.6: its data goes with it.
// etcd lets no member join while a downgrade is enabled, so the operator must remove the lost
// member, cancel the downgrade, add a member on 3.6 and then finish the downgrade (enabling it
// again when no member runs 3.5 yet): every member on 3.5, none of the acknowledged writes lost.
func memberLostMidDowngrade(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	to := upgradeFrom
	patchSpec(t, f, ns, func(s *etcdv1beta2.ClusterSpec) { s.Version = to })
	onOlder := func() (moved, newer []string) {
		for _, p := range listMembers(f, ns) {
			if p.Spec.Containers[0].Image == framework.EtcdImage(to) {
				moved = append(moved, p.Name)
			} else {
				newer = append(newer, p.Name)
			}
		}
		return moved, newer
	}
	// Paused as soon as etcd reports the downgrade enabled (the members then migrate their
	// storage for seconds before the first moves), so that the loss lands while the downgrade
	// is enabled and members still run 3.6: members move in seconds each.
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	framework.Eventually(t, 3*time.Minute, "etcd's downgrade enabled", func(ctx context.Context) (bool, error) {
		st, err := cli.Status(ctx, framework.ClientEndpoint(ns, "c"))
		if err != nil {
			return false, err
		}
		return st.DowngradeInfo != nil && st.DowngradeInfo.Enabled, fmt.Errorf("not enabled yet (etcd %s)", st.Version)
	})
	f.SetPaused(t, ns, "c", true)
	framework.Eventually(t, time.Minute, "the operator paused", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, "c")
		return err == nil && c.Status.ControlPaused, err
	})
	moved, newer := onOlder()
	if len(newer) == 0 {
		t.Fatalf("every member moved to %s before the pause: no member on %s to lose", to, upgradeTo)
	}
	victim := newer[rng.IntN(len(newer))]
	forceDelete(t, f, ns, victim)
	lost := time.Now()
	f.SetPaused(t, ns, "c", false)
	t.Logf("fault: %s, still on %s, lost with its data during the downgrade (%v already on %s)", victim, upgradeTo, moved, to)
	waitAllOn(t, f, ns, to)
	waitHealed(t, f, ns, 3)
	return injected{size: 3, over: lost, note: fmt.Sprintf("%s lost on %s; every member on %s %s after the loss", victim, upgradeTo, to, time.Since(lost).Round(100*time.Millisecond))}
}

// waitAllOn waits until every member pod of cluster c runs version and status says so (the
// members' readiness is waitHealed's).
func waitAllOn(t *testing.T, f *framework.Framework, ns, version string) {
	t.Helper()
	framework.Eventually(t, healTimeout, "every member on "+version, func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, "c")
		if err != nil {
			return false, err
		}
		var other []string
		for _, p := range listMembers(f, ns) {
			if p.Spec.Containers[0].Image != framework.EtcdImage(version) {
				other = append(other, p.Name)
			}
		}
		return len(other) == 0 && c.Status.CurrentVersion == version, fmt.Errorf("status.currentVersion %q, pods not on %s: %v", c.Status.CurrentVersion, version, other)
	})
}

// withVersion makes the cluster at the upgrade kind's old version.
func withVersion(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = upgradeFrom }

// armFailpoint sets ETCD_OPERATOR_FAILPOINT on the etcd operator (a rollout) and disarms it
// when the run ends, whatever happens to it.
func armFailpoint(t *testing.T, f *framework.Framework, name string) {
	t.Helper()
	t.Cleanup(func() { f.SetEtcdOperatorEnv(t, "ETCD_OPERATOR_FAILPOINT-") })
	f.SetEtcdOperatorEnv(t, "ETCD_OPERATOR_FAILPOINT="+name)
}

func operatorRestarts(t *testing.T, f *framework.Framework) int32 {
	t.Helper()
	n, err := f.OperatorRestarts(t.Context(), "etcd-operator")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitOperatorExit waits until the etcd operator's container restarted once more than before
// (it reached its armed failpoint) and returns when that was seen.
func waitOperatorExit(t *testing.T, f *framework.Framework, before int32) time.Time {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, "the etcd operator to exit at its failpoint", func(ctx context.Context) (bool, error) {
		n, err := f.OperatorRestarts(ctx, "etcd-operator")
		if err != nil {
			return false, err
		}
		return n > before, fmt.Errorf("restarts %d", n)
	})
	return time.Now()
}

// killOperatorNow force-deletes the pods of an operator Deployment and returns at once.
func killOperatorNow(t *testing.T, f *framework.Framework, deployment string) {
	t.Helper()
	for _, p := range operatorPods(t, f, deployment) {
		forceDelete(t, f, framework.OperatorNamespace, p.Name)
	}
}

func isLearner(t *testing.T, cli *clientv3.Client, name string) bool {
	t.Helper()
	ml, err := cli.MemberList(t.Context())
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	for _, m := range ml.Members {
		if m.Name == name {
			return m.IsLearner
		}
	}
	return false
}
