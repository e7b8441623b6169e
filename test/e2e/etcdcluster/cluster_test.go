//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestCreateScaleUpDown: size 3 -> Available with 3 started voting members, data written
// through the client Service readable from every member; 3 -> 5 -> 3 under a continuous
// writer with no acknowledged write lost. Prints create->Available and 3->5 times.
func TestCreateScaleUpDown(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-scale")
	f.Create(t, newCluster(ns, "c", 3))
	took := waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	t.Logf("MEASURE create -> Available (size 3): %s", took.Round(100*time.Millisecond))

	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "hello", "world")
	checkMembers(t, f, nil, "http", ns, "c", 3, "hello", "world")
	checkMemberDetails(t, f, cli, ns, "c", 3)

	w := framework.StartWriter(cli, "w-")
	scale(t, f, ns, "c", 5)
	took = waitAvailable(t, f, ns, "c", 5, 5*time.Minute)
	t.Logf("MEASURE scale 3 -> 5 -> Available: %s", took.Round(100*time.Millisecond))
	checkMembers(t, f, nil, "http", ns, "c", 5, "hello", "world")
	scale(t, f, ns, "c", 3)
	took = waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	t.Logf("MEASURE scale 5 -> 3 -> Available: %s", took.Round(100*time.Millisecond))
	w.Finish(t)
	checkMembers(t, f, nil, "http", ns, "c", 3, "hello", "world")
}

// checkMemberDetails: status.members.details describes size healthy members with a database,
// and status.leader is the member etcd itself reports as leader.
func checkMemberDetails(t testing.TB, f *framework.Framework, cli *clientv3.Client, ns, name string, size int) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, "member details", func(ctx context.Context) (bool, error) {
		st, err := cli.Status(ctx, clientEndpoint(ns, name))
		if err != nil {
			return false, err
		}
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		leaders := 0
		for _, d := range c.Status.Members.Details {
			if !d.Healthy || d.DBSize <= 0 || d.DBSizeInUse <= 0 || d.Version == "" {
				return false, fmt.Errorf("member %+v", d)
			}
			if d.Role == etcdv1beta2.MemberRoleLeader {
				leaders++
				if d.ID != fmt.Sprintf("%x", st.Leader) || d.Name != c.Status.Leader {
					return false, fmt.Errorf("status names %s (%s) as leader, etcd says %x", d.Name, d.ID, st.Leader)
				}
			}
		}
		if len(c.Status.Members.Details) != size || leaders != 1 {
			return false, fmt.Errorf("%d members described, %d leaders: %+v", len(c.Status.Members.Details), leaders, c.Status.Members.Details)
		}
		return true, nil
	})
}

func scale(t testing.TB, f *framework.Framework, ns, name string, size int32) {
	t.Helper()
	c := getCluster(t, f, ns, name)
	before := c.DeepCopy()
	c.Spec.Size = size
	if err := f.Client.Patch(context.Background(), c, client.MergeFrom(before)); err != nil {
		t.Fatalf("scaling %s to %d: %v", name, size, err)
	}
}

// TestDeadMemberReplaced: deleting one member pod (emptyDir: its data is gone) -> the member
// is removed and replaced, the cluster is Available again and the data is intact.
func TestDeadMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-dead")
	f.Create(t, newCluster(ns, "c", 3))
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "k", "v")
	victim := memberPods(t, f, ns, "c")[1].Name
	deletePods(t, f, ns, victim)
	framework.Eventually(t, 5*time.Minute, victim+" replaced", func(ctx context.Context) (bool, error) {
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, c); err != nil {
			return false, err
		}
		return len(c.Status.Members.Ready) == 3 && !slices.Contains(c.Status.Members.Ready, victim) && c.Status.Members.Unready == nil, nil
	})
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")
}

// TestPVCAllPodsDeleted: with persistentVolumeClaimSpec, deleting every member pod at once
// -> the pods come back on their volumes with the same names and identities, with all data.
func TestPVCAllPodsDeleted(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-pvc")
	c := newCluster(ns, "c", 3)
	onVolumes(c)
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "k", "v")
	idBefore := getCluster(t, f, ns, "c").Status.ClusterID
	var names []string
	old := map[types.UID]bool{}
	for _, p := range memberPods(t, f, ns, "c") {
		names = append(names, p.Name)
		old[p.UID] = true
	}
	deletePods(t, f, ns, names...)
	framework.Eventually(t, 3*time.Minute, "every member pod recreated", func(ctx context.Context) (bool, error) {
		pods := memberPods(t, f, ns, "c")
		for _, p := range pods {
			if p.DeletionTimestamp != nil || old[p.UID] {
				return false, fmt.Errorf("pod %s not replaced yet", p.Name)
			}
		}
		return len(pods) == len(names), fmt.Errorf("%d pods", len(pods))
	})
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	var after []string
	for _, p := range memberPods(t, f, ns, "c") {
		after = append(after, p.Name)
	}
	if !slices.Equal(after, names) || getCluster(t, f, ns, "c").Status.ClusterID != idBefore {
		t.Fatalf("members after %v (cluster %s), want the same %v (cluster %s)", after, getCluster(t, f, ns, "c").Status.ClusterID, names, idBefore)
	}
	checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")
}

// TestUpgrade35To36: 3.5 -> 3.6 under continuous writes, one member at a time; all members
// end on 3.6 with no acknowledged write lost (the way down: TestDowngrade36To35AndBack).
func TestUpgrade35To36(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-upgrade")
	c := newCluster(ns, "c", 3)
	c.Spec.Version = oldVersion
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "k", "v")
	w := framework.StartWriter(cli, "w-")
	moveTo(t, f, ns, newVersion)
	w.Finish(t)
	for _, p := range memberPods(t, f, ns, "c") {
		if img := p.Spec.Containers[0].Image; img != framework.EtcdImage(newVersion) {
			t.Errorf("pod %s runs %s", p.Name, img)
		}
	}
	checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")
}

// TestQuorumLost: deleting 2 of 3 member pods on emptyDir -> Degraded=True QuorumLost,
// nothing deleted: the member list keeps 3 members and the surviving pod stays.
func TestQuorumLost(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-quorum")
	f.Create(t, newCluster(ns, "c", 3))
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	pods := memberPods(t, f, ns, "c")
	survivor := pods[0]
	deletePods(t, f, ns, pods[1].Name, pods[2].Name)
	framework.Eventually(t, 3*time.Minute, "QuorumLost", func(ctx context.Context) (bool, error) {
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, c); err != nil {
			return false, err
		}
		return condition(c, "Degraded") == "True/QuorumLost" && condition(c, "Available") == "False/EtcdUnreachable", nil
	})
	c := getCluster(t, f, ns, "c")
	t.Logf("Degraded: %s", degradedMessage(c))
	left := memberPods(t, f, ns, "c")
	if len(left) != 1 || left[0].UID != survivor.UID {
		t.Fatalf("pods after quorum loss: %d, want only the survivor %s", len(left), survivor.Name)
	}
	cli := etcdClient(t, f, nil, memberEndpoint(ns, "c", survivor.Name))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ml, err := cli.MemberList(ctx, clientv3WithSerializable())
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list on the survivor: %v (%v), want all 3 members kept", ml, err)
	}
}
