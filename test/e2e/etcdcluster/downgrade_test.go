//go:build e2e

package etcdcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestDowngrade36To35AndBack: a 3-member volume cluster on 3.6 whose pods carry flags etcd 3.5
// does not know (the corruption checks' 3.6 names) is downgraded to 3.5 under continuous
// writes: etcd's downgrade is enabled, and each member's pod is made again on its volume with
// 3.5's flags (the same members, the same volumes). Then it goes back up to 3.6 in place. No
// acknowledged write is lost, and every member reads the data after each move.
func TestDowngrade36To35AndBack(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-downgrade")
	c := onVolumes(newCluster(ns, "c", 3))
	c.Spec.MemberReplacement = &etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](60)}
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	volumes, ids := volumeUIDs(t, f, ns, "c"), memberIDs(t, f, ns)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "k", "v")
	w := framework.StartWriter(cli, "w-")

	moveTo := func(version string) {
		t.Helper()
		c := getCluster(t, f, ns, "c")
		before := c.DeepCopy()
		c.Spec.Version = version
		if err := f.Client.Patch(context.Background(), c, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		framework.Eventually(t, 8*time.Minute, "every member on "+version, func(ctx context.Context) (bool, error) {
			c := &etcdv1beta2.EtcdCluster{}
			if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, c); err != nil {
				return false, err
			}
			for _, p := range memberPods(t, f, ns, "c") {
				if p.Spec.Containers[0].Image != framework.EtcdImage(version) {
					return false, nil
				}
			}
			return c.Status.CurrentVersion == version && c.Status.ReadyMembers == 3 && condition(c, "Upgrading") == "False/AsExpected", nil
		})
		t.Logf("MEASURE %s -> %s (3 members on volumes): %s", before.Spec.Version, version, time.Since(start).Round(100*time.Millisecond))
		waitAvailable(t, f, ns, "c", 3, 2*time.Minute)
		checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")
	}

	moveTo(oldVersion)
	for _, p := range memberPods(t, f, ns, "c") {
		if args := strings.Join(p.Spec.Containers[0].Command, " "); !strings.Contains(args, "--experimental-corrupt-check-time=60s") || strings.Contains(args, "--feature-gates") {
			t.Errorf("pod %s on 3.5 runs %s, want 3.5's flag names", p.Name, args)
		}
	}
	if n := countEvents(t, f, ns, "EnableDowngrade"); n != 1 {
		t.Errorf("%d EnableDowngrade events, want 1", n)
	}
	moveTo(newVersion)
	w.Finish(t)
	if after := volumeUIDs(t, f, ns, "c"); !slices.Equal(after, volumes) {
		t.Errorf("volumes after the downgrade and back %v, want the same %v", after, volumes)
	}
	if after := memberIDs(t, f, ns); !slices.Equal(after, ids) {
		t.Errorf("members after the downgrade and back %v, want the same %v", after, ids)
	}
}

// volumeUIDs are the UIDs of the cluster's member volume claims, sorted by name.
func volumeUIDs(t testing.TB, f *framework.Framework, ns, name string) []string {
	t.Helper()
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := f.Client.List(context.Background(), pvcs, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pvcs.Items, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	var uids []string
	for _, p := range pvcs.Items {
		uids = append(uids, p.Name+"/"+string(p.UID))
	}
	return uids
}
