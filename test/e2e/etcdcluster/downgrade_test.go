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

// TestDowngrade36To35AndBack: 3-member clusters on 3.6 downgraded to 3.5 under continuous
// writes through etcd's downgrade API, then back up to 3.6 in place:
//   - volumes: the pods carry flags etcd 3.5 does not know (the corruption checks' 3.6 names),
//     so each is made again on its volume with 3.5's flags (the same members and volumes);
//   - emptydir: the pods' flags are 3.5's too, so each member moves in place (the same
//     members, their data kept in their pods).
//
// No acknowledged write is lost, and every member reads the data after each move.
func TestDowngrade36To35AndBack(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	for _, volumes := range []bool{true, false} {
		name := "volumes"
		if !volumes {
			name = "emptydir"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := f.CreateNamespace(t, "etcd-downgrade-"+name)
			c := newCluster(ns, "c", 3)
			if volumes {
				c = onVolumes(c)
				c.Spec.MemberReplacement = &etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](60)}
			}
			f.Create(t, c)
			waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
			claims, ids := volumeUIDs(t, f, ns, "c"), memberIDs(t, f, ns)
			cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
			put(t, cli, "k", "v")
			w := framework.StartWriter(cli, "w-")

			moveTo(t, f, ns, oldVersion)
			if volumes {
				for _, p := range memberPods(t, f, ns, "c") {
					if args := strings.Join(p.Spec.Containers[0].Command, " "); !strings.Contains(args, "--experimental-corrupt-check-time=60s") || strings.Contains(args, "--feature-gates") {
						t.Errorf("pod %s on 3.5 runs %s, want 3.5's flag names", p.Name, args)
					}
				}
			}
			if n := countEvents(t, f, ns, "EnableDowngrade"); n != 1 {
				t.Errorf("%d EnableDowngrade events, want 1", n)
			}
			moveTo(t, f, ns, newVersion)
			w.Finish(t)
			if got := memberIDs(t, f, ns); !slices.Equal(got, ids) {
				t.Errorf("members after the downgrade and back %v, want the same %v", got, ids)
			}
			if got := volumeUIDs(t, f, ns, "c"); !slices.Equal(got, claims) {
				t.Errorf("volumes after the downgrade and back %v, want the same %v", got, claims)
			}
		})
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
