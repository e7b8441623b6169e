package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// TestRecoveryFromSurvivors (issue 31 item 3): with spec.survivorRecovery, a volume cluster
// that lost two of its three members is not forced while their volumes exist (a partition:
// they may come back), even past afterSeconds; once their volumes are gone, the survivor is
// restarted alone with --force-new-cluster on its own volume (never a new one), then without
// the flag once it stands alone, and the cluster grows back to three with fresh members.
// status.lastSurvivorRecovery and events say which member was kept, at which revision, and
// that the recovery completed; the test plays etcd's side of --force-new-cluster.
func TestRecoveryFromSurvivors(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "survivors")
	c := withPVC(newCluster(ns, "c", 3))
	c.Spec.SurvivorRecovery = &etcdv1beta2.SurvivorRecoverySpec{AfterSeconds: ptr.To[int32](30)}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	uid := getCluster(t, ns, "c").UID
	survivorVolume := uidOf(t, ns, "c-1", &corev1.PersistentVolumeClaim{})
	pastAfter := func() { reconciler.dataLostSince.Store("survivors/"+string(uid), time.Now().Add(-time.Hour)) }

	// Two members die; every volume is still there: quorum lost, nothing forced.
	f.set(func(f *fakeEtcd) {
		f.leaderless, f.raftIndex = true, map[string]uint64{"c-1": 40}
	})
	f.kill("c-0", "c-2")
	pastAfter()
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "QuorumLost, no survivor forced while the volumes exist", testutil.NoError(func() error {
		pastAfter()
		msg := degradedMsg(getCluster(t, ns, "c"))
		if !strings.Contains(msg, "3 of the 3 voting members still have their volumes") {
			return fmt.Errorf("Degraded: %q", msg)
		}
		return nil
	}))
	if p := getPod(t, ns, "c-1"); member.PodForcedNewCluster(p) {
		t.Fatal("c-1 forced while the other members' volumes exist")
	}

	// Their volumes go with their nodes (and the pods with them).
	for _, name := range []string{"c-0", "c-2"} {
		deleteVolume(t, ns, name)
	}
	deleteAllPods(t, ns, "c-0", "c-2")
	testutil.Eventually(t, testutil.Timeout, "c-1 restarted alone with --force-new-cluster", testutil.NoError(func() error {
		pastAfter()
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, p); err != nil {
			return err
		}
		if !member.PodForcedNewCluster(p) || !slices.Contains(p.Spec.Containers[0].Command, "--force-new-cluster") {
			return fmt.Errorf("pod c-1 command %v", p.Spec.Containers[0].Command)
		}
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-1"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	}))
	rec := getCluster(t, ns, "c").Status.LastSurvivorRecovery
	if rec == nil || rec.Member != "c-1" || rec.RaftIndex != 40 || rec.Revision != 1000 || !slices.Equal(rec.LostMembers, []string{"c-0", "c-2"}) || rec.CompletedAt != nil {
		t.Fatalf("status.lastSurvivorRecovery %+v; want c-1 at raft index 40, revision 1000, c-0 and c-2 lost, not completed", rec)
	}
	if got := uidOf(t, ns, "c-1", &corev1.PersistentVolumeClaim{}); got != survivorVolume {
		t.Fatalf("c-1's volume replaced (uid %s, was %s)", got, survivorVolume)
	}
	testutil.Eventually(t, testutil.Timeout, "one SurvivorRecovery warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonSurvivorRecovery, 1)
	}))

	// etcd's side: the forced member forms a cluster of itself.
	forcedPod := uidOf(t, ns, "c-1", &corev1.Pod{})
	f.set(func(f *fakeEtcd) {
		var keep []cluster.Member
		for _, m := range f.members {
			if m.Name == "c-1" {
				keep = append(keep, m)
			}
		}
		f.members, f.leaderless, f.dead = keep, false, map[string]bool{}
	})
	waitConverged(t, ns, f, 3)
	p := getPod(t, ns, "c-1")
	if p.UID == forcedPod || member.PodForcedNewCluster(p) || slices.Contains(p.Spec.Containers[0].Command, "--force-new-cluster") {
		t.Fatalf("c-1 still runs the forced pod (uid %s, command %v)", p.UID, p.Spec.Containers[0].Command)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-1"}, pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.UID != survivorVolume || pvc.Annotations[etcdv1beta2.AnnotationForceNewCluster] != "" {
		t.Fatalf("c-1's volume: uid %s (was %s), annotations %v", pvc.UID, survivorVolume, pvc.Annotations)
	}
	testutil.Eventually(t, testutil.Timeout, "the recovery recorded as completed", testutil.NoError(func() error {
		if rec := getCluster(t, ns, "c").Status.LastSurvivorRecovery; rec == nil || rec.CompletedAt == nil {
			return fmt.Errorf("status.lastSurvivorRecovery %+v", rec)
		}
		return nil
	}))
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// deleteVolume deletes a member's volume for good, as a lost node's local volume goes: envtest
// runs no controller to lift the in-use protection, so the test does.
func deleteVolume(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, pvc, client.Preconditions{UID: ptr.To(pvc.UID)}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "volume "+name+" gone", testutil.NoError(func() error {
		got := &corev1.PersistentVolumeClaim{}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)
		switch {
		case err != nil:
			return client.IgnoreNotFound(err)
		case got.UID != pvc.UID:
			return nil // made again by the operator: the old one is gone
		case len(got.Finalizers) > 0:
			got.Finalizers = nil
			return fmt.Errorf("lifting the finalizers: %w", k8s.Update(ctx, got))
		}
		return fmt.Errorf("volume %s still there", name)
	}))
}
