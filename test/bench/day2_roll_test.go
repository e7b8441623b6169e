//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// replaceAfter is spec.memberReplacement.afterSeconds of the corrupt-member figure: the
// least the API allows, and part of the figure.
const replaceAfter = 30

// day2Extra reports whether the roll, corrupt-member and quorum figures run: BENCH_DAY2_EXTRA=0 leaves
// them out (the CI smoke, for time: the e2e suite runs the same paths, TestRollingSpecChange
// and TestCorruptMemberReplaced).
func day2Extra() bool { return os.Getenv("BENCH_DAY2_EXTRA") != "0" }

// timeCorruptReplace corrupts a follower's data on disk (framework.CorruptMember: its pod
// comes back on a volume etcd refuses and crash-loops) and returns the seconds from its pod's
// return to size ready members without it: replaceAfter of waiting, then the removal and a
// fresh member's join.
func timeCorruptReplace(t *testing.T, f *framework.Framework, ns, name string, size int) float64 {
	changeSpec(t, f, ns, name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.MemberReplacement = &etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](replaceAfter)}
	})
	victim, victimID := follower(t, f, ns, name)
	f.CorruptMember(t, ns, name, victim)
	start := time.Now()
	framework.Eventually(t, day2Timeout, victim+" replaced", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(c.Status.Members.Details, func(m etcdv1beta2.MemberStatus) bool { return m.ID == victimID }) {
			return false, fmt.Errorf("%s (%s) still a member", victim, victimID)
		}
		err = allReady(c, size)
		return err == nil, err
	})
	secs := time.Since(start).Seconds()
	t.Logf("%s: corrupt member %s replaced: %.1f s (%d s of it afterSeconds)", name, victim, secs, replaceAfter)
	return secs
}

// timeRoll changes the members' CPU request to cpu and returns the seconds until every member
// pod runs with it and the cluster is ready at size with nothing outdated.
func timeRoll(t *testing.T, f *framework.Framework, ns, name string, size int, cpu string) float64 {
	want := resource.MustParse(cpu)
	start := changeSpec(t, f, ns, name, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: want}}
	})
	framework.Eventually(t, day2Timeout, fmt.Sprintf("%s rolled to cpu %s", name, cpu), func(ctx context.Context) (bool, error) {
		for _, p := range memberPods(t, f, ns, name) {
			if p.DeletionTimestamp != nil || !p.Spec.Containers[0].Resources.Requests.Cpu().Equal(want) {
				return false, fmt.Errorf("pod %s not rolled yet", p.Name)
			}
		}
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		if len(c.Status.Members.Outdated) > 0 {
			return false, fmt.Errorf("outdated %v", c.Status.Members.Outdated)
		}
		err = allReady(c, size)
		return err == nil, err
	})
	secs := time.Since(start).Seconds()
	t.Logf("%s: %d members rolled: %.1f s", name, size, secs)
	return secs
}

// follower returns the name and etcd member ID of the follower of cluster name with the highest
// index, as its status lists them: the one whose name a member added in its place reuses once
// nothing of it remains, so that a name-based check of a replacement cannot pass or hang by luck.
func follower(t *testing.T, f *framework.Framework, ns, name string) (string, string) {
	c, err := f.GetCluster(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	details := slices.Clone(c.Status.Members.Details)
	slices.SortFunc(details, func(a, b etcdv1beta2.MemberStatus) int {
		return cluster.MemberIndex(b.Name) - cluster.MemberIndex(a.Name)
	})
	for _, m := range details {
		if m.Role == etcdv1beta2.MemberRoleFollower && m.ID != "" {
			return m.Name, m.ID
		}
	}
	t.Fatalf("%s: no follower in status %+v", name, c.Status.Members.Details)
	return "", ""
}

func memberPods(t *testing.T, f *framework.Framework, ns, name string) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}
