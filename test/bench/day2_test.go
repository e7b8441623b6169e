//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The versions of the e2e upgrade test: the 3.5 release hack/images.sh imports for upgrade
// tests (ETCD_OLD_VERSION), and the default.
const (
	upgradeFrom = "3.5.35"
	upgradeTo   = etcdv1beta2.DefaultEtcdVersion
)

// day2Timeout bounds each wait of a day-two step: minutes more than a slow run takes.
const day2Timeout = 5 * time.Minute

// benchDay2 times the day-two operations. One 3-member cluster on volumes per run serves all
// of them, so that the smoke (BENCH_RUNS=1) makes one cluster: created at upgradeFrom, upgraded
// to upgradeTo, a dead member replaced, a corrupt member replaced, a change rolled through 3
// members, then scaled 3 -> 5 and a change rolled through 5. The order gives each step the
// healthy cluster of the shape it needs (the replacements and the upgrade want 3 members).
func benchDay2(t *testing.T, f *framework.Framework, rep *report) {
	ns := f.CreateNamespace(t, "bench-day2")
	var upgrade, replace, corrupt, roll3, scale, joins, roll5 []float64
	for i := range rep.Runs {
		name := fmt.Sprintf("d-%d", i)
		c := pvcCluster(ns, name, 3, 256*mib)
		c.Spec.Version = upgradeFrom
		f.Create(t, c)
		f.WaitClusterAvailable(t, ns, name, 3, day2Timeout)
		upgrade = append(upgrade, timeUpgrade(t, f, ns, name))
		replace = append(replace, timeReplace(t, f, ns, name))
		if day2Extra() {
			corrupt = append(corrupt, timeCorruptReplace(t, f, ns, name, 3))
			roll3 = append(roll3, timeRoll(t, f, ns, name, 3, "21m"))
		}
		secs, added := timeScaleUp(t, f, ns, name)
		scale, joins = append(scale, secs), append(joins, added...)
		if day2Extra() {
			roll5 = append(roll5, timeRoll(t, f, ns, name, 5, "22m"))
		}
		deleteCluster(t, f, ns, name)
	}
	rep.add(figure{Name: fmt.Sprintf("rolling upgrade %s -> %s, 3 members with volumes: spec change -> every member on %s, ready, Upgrading False", upgradeFrom, upgradeTo, upgradeTo), Values: upgrade})
	rep.add(figure{Name: "dead member replaced, 3 members with volumes: a follower's pod and volume deleted -> 3 ready members, a new one in its place", Values: replace})
	if day2Extra() {
		rep.add(figure{Name: fmt.Sprintf("corrupt member replaced, 3 members with volumes: a follower's pod back on a db overwritten with garbage -> 3 ready members, a fresh one in its place (memberReplacement.afterSeconds %d)", replaceAfter),
			Values: corrupt, Baseline: "dead member replaced, 3 members with volumes: a follower's pod and volume deleted -> 3 ready members, a new one in its place",
			Note: fmt.Sprintf("%d s of each value is the wait for the member to stay unhealthy that long", replaceAfter)})
		rep.add(figure{Name: "rolling change, 3 members with volumes: spec.pod.resources changed -> every member restarted with it, ready, none outdated", Values: roll3})
	}
	rep.add(figure{Name: "scale 3 -> 5 with volumes: spec change -> Available with 5 ready members", Values: scale})
	if day2Extra() {
		rep.add(figure{Name: "rolling change, 5 members with volumes: spec.pod.resources changed -> every member restarted with it, ready, none outdated", Values: roll5,
			Baseline: "rolling change, 3 members with volumes: spec.pod.resources changed -> every member restarted with it, ready, none outdated"})
	}
	rep.add(figure{Name: "each added member (scale 3 -> 5, volumes): its etcd container's start -> a ready voting member in status", Values: joins,
		Note: "startedAt has 1 s resolution and status is polled every 0.5 s: up to 1.5 s too long", Target: "< 10 s", TargetMax: 10})
}

// timeUpgrade changes spec.version to upgradeTo and returns the seconds until every member
// runs it, healthy and ready, with the upgrade reported finished.
func timeUpgrade(t *testing.T, f *framework.Framework, ns, name string) float64 {
	start := changeSpec(t, f, ns, name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Version = upgradeTo })
	framework.Eventually(t, day2Timeout, name+" upgraded to "+upgradeTo, func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		if err := allReady(c, 3); err != nil {
			return false, err
		}
		for _, m := range c.Status.Members.Details {
			if m.Version != upgradeTo {
				return false, fmt.Errorf("member %s on %s", m.Name, m.Version)
			}
		}
		if c.Status.CurrentVersion != upgradeTo || !meta.IsStatusConditionFalse(c.Status.Conditions, etcdv1beta2.ClusterConditionUpgrading) {
			return false, fmt.Errorf("currentVersion %s, conditions %v", c.Status.CurrentVersion, c.Status.Conditions)
		}
		return true, nil
	})
	secs := time.Since(start).Seconds()
	t.Logf("%s: upgrade %s -> %s: %.1f s", name, upgradeFrom, upgradeTo, secs)
	return secs
}

// timeReplace kills a follower the way a lost node with a local volume does: its volume
// claim and its pod are deleted at once (grace period 0). On volumes, deleting only the pod
// is not a dead member: the operator recreates the pod on the volume with the same identity.
// A follower, so that the figure is the replacement and not a leader election besides. It
// returns the seconds until 3 members are ready again, the dead one not among them. The dead
// member is told by its etcd member ID, not its name: once its pod and volume are gone, the
// member added in its place may take its name again (cluster.NextMemberName reuses the
// highest index when nothing of its previous owner remains).
func timeReplace(t *testing.T, f *framework.Framework, ns, name string) float64 {
	victim, victimID := follower(t, f, ns, name)
	start := time.Now()
	// The claim first: the kubelet holds it (pvc-protection) until the pod is gone, and the
	// operator never sees the pod gone with its volume still there (that would recreate it).
	obj := metav1.ObjectMeta{Namespace: ns, Name: victim}
	if err := f.Client.Delete(t.Context(), &corev1.PersistentVolumeClaim{ObjectMeta: obj}); err != nil {
		t.Fatalf("deleting the volume of %s: %v", victim, err)
	}
	if err := f.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: obj}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s: %v", victim, err)
	}
	framework.Eventually(t, day2Timeout, victim+" replaced", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		for _, m := range c.Status.Members.Details {
			if m.ID == victimID {
				return false, fmt.Errorf("member %s (%s) still listed", victimID, m.Name)
			}
		}
		err = allReady(c, 3)
		return err == nil, err
	})
	secs := time.Since(start).Seconds()
	t.Logf("%s: dead member %s (%s) replaced: %.1f s", name, victim, victimID, secs)
	return secs
}

// timeScaleUp scales the cluster to 5 and returns the seconds until it is Available with 5
// ready members, and for each added member the seconds from its etcd container's start to the
// first poll that shows it in status as a ready, healthy voting member. The second figure
// leaves out what comes before the container starts (the volume, the pod's scheduling and
// image) and measures what is etcd's and the operator's: start, catch up as a learner, promote,
// report.
func timeScaleUp(t *testing.T, f *framework.Framework, ns, name string) (float64, []float64) {
	c, err := f.GetCluster(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, m := range c.Status.Members.Details {
		old[m.Name] = true
	}
	readyAt := map[string]time.Time{}
	start := changeSpec(t, f, ns, name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 5 })
	framework.Eventually(t, day2Timeout, name+" Available with 5 members", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		now := time.Now()
		for _, m := range c.Status.Members.Details {
			voter := m.Role == etcdv1beta2.MemberRoleLeader || m.Role == etcdv1beta2.MemberRoleFollower
			if !old[m.Name] && readyAt[m.Name].IsZero() && voter && m.Healthy && slices.Contains(c.Status.Members.Ready, m.Name) {
				readyAt[m.Name] = now
			}
		}
		err = allReady(c, 5)
		return err == nil, err
	})
	secs := time.Since(start).Seconds()
	t.Logf("%s: scale 3 -> 5: %.1f s", name, secs)
	var joins []float64
	for pod, at := range readyAt {
		started := etcdStarted(t, f, ns, pod)
		joins = append(joins, at.Sub(started).Seconds())
		t.Logf("%s: member %s: container started %s, ready voter %.1f s later", name, pod, started.Format(time.TimeOnly), at.Sub(started).Seconds())
	}
	if len(joins) != 2 {
		t.Fatalf("%s: saw %d added members become ready, want 2: %v", name, len(joins), readyAt)
	}
	return secs, joins
}

// etcdStarted is when the etcd container of pod last started (the kubelet's startedAt).
func etcdStarted(t *testing.T, f *framework.Framework, ns, pod string) time.Time {
	p := &corev1.Pod{}
	if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == member.ContainerName && cs.State.Running != nil {
			if cs.RestartCount > 0 {
				t.Logf("pod %s: etcd restarted %d times; timing from its last start", pod, cs.RestartCount)
			}
			return cs.State.Running.StartedAt.Time
		}
	}
	t.Fatalf("pod %s: etcd container not running: %+v", pod, p.Status.ContainerStatuses)
	return time.Time{}
}

// changeSpec applies change to the cluster's spec and returns when it was sent.
func changeSpec(t *testing.T, f *framework.Framework, ns, name string, change func(*etcdv1beta2.EtcdCluster)) time.Time {
	c, err := f.GetCluster(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	before := c.DeepCopy()
	change(c)
	start := time.Now()
	if err := f.Client.Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatalf("changing the spec of %s: %v", name, err)
	}
	return start
}

// allReady is nil when status is for the current spec and shows size ready members, none
// unready, every one healthy, and the cluster Available; otherwise it says what is missing.
func allReady(c *etcdv1beta2.EtcdCluster, size int) error {
	s := c.Status
	unhealthy := slices.ContainsFunc(s.Members.Details, func(m etcdv1beta2.MemberStatus) bool { return !m.Healthy })
	if s.ObservedGeneration != c.Generation || !meta.IsStatusConditionTrue(s.Conditions, etcdv1beta2.ClusterConditionAvailable) ||
		len(s.Members.Ready) != size || int(s.ReadyMembers) != size || len(s.Members.Unready) != 0 || len(s.Members.Details) != size || unhealthy {
		return fmt.Errorf("generation %d observed %d, phase %s, ready %v, unready %v, details %+v", c.Generation, s.ObservedGeneration, s.Phase, s.Members.Ready, s.Members.Unready, s.Members.Details)
	}
	return nil
}
