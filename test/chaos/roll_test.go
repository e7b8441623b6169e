//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// rollCPU is the CPU request the roll kind changes the members to.
var rollCPU = resource.MustParse("21m")

// memberKilledMidRoll changes the members' CPU request, which the operator rolls to the running
// members one at a time, and once the first member was rolled (evicted and back with the new
// spec), at a seeded point, force-deletes a seeded member's pod. The roll must still finish
// (every pod with the new spec, nothing outdated) with no write lost and no stray member; heal
// counts from the kill to that.
func memberKilledMidRoll(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	c, err := f.GetCluster(t.Context(), ns, "c")
	if err != nil {
		t.Fatal(err)
	}
	before := c.DeepCopy()
	c.Spec.Pod.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: rollCPU}}
	if err := f.Client.Patch(t.Context(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 3*time.Minute, "the first member rolled", func(ctx context.Context) (bool, error) {
		return rolledPods(t, f, ns) >= 1, fmt.Errorf("no member rolled yet")
	})
	time.Sleep(time.Duration(rng.IntN(5000)) * time.Millisecond) //nolint:forbidigo // a seeded point inside the roll
	pods := memberPods(t, f, ns)
	victim := pods[rng.IntN(len(pods))].Name
	rolled := rolledPods(t, f, ns)
	forceDelete(t, f, ns, victim)
	killed := time.Now()
	framework.Eventually(t, 5*time.Minute, "the roll finished", func(ctx context.Context) (bool, error) {
		cur, err := f.GetCluster(ctx, ns, "c")
		if err != nil {
			return false, err
		}
		n := rolledPods(t, f, ns)
		return n == 3 && len(cur.Status.Members.Outdated) == 0 && cur.Status.ReadyMembers == 3,
			fmt.Errorf("%d pods rolled, outdated %v, %d ready", n, cur.Status.Members.Outdated, cur.Status.ReadyMembers)
	})
	return injected{size: 3, over: killed, note: fmt.Sprintf("%s killed with %d of 3 members rolled; the roll finished %.1f s later", victim, rolled, time.Since(killed).Seconds())}
}

// rolledPods counts the member pods running with rollCPU, not being deleted.
func rolledPods(t *testing.T, f *framework.Framework, ns string) int {
	n := 0
	for _, p := range memberPods(t, f, ns) {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Resources.Requests.Cpu().Equal(rollCPU) {
			n++
		}
	}
	return n
}
