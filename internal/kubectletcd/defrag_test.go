package kubectletcd

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestDefrag: the etcd operator has no on-demand defragmentation, so `defrag` changes nothing
// (the cluster's spec, annotations and resourceVersion stay), says so, and exits 1; it shows
// the policy and, per member, whether the operator's rule makes it due and why; -o json prints
// the same with requested false.
func TestDefrag(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "defrag")
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	const mib = 1 << 20
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{
		LastDefragmentationRound: &metav1.Time{Time: time.Date(2026, 11, 22, 3, 0, 5, 0, time.UTC)},
		Members: etcdv1beta2.MembersStatus{Details: []etcdv1beta2.MemberStatus{
			{Name: "main-0", ID: "a", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 40 * mib, Healthy: true},
			{Name: "main-1", ID: "b", Role: etcdv1beta2.MemberRoleLeader, DBSize: 100 * mib, DBSizeInUse: 90 * mib, Healthy: true},
			{Name: "main-2", ID: "c", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 10 * mib, Healthy: true, LastDefragmentationTime: ago(now, 3*time.Minute)},
		}},
	})
	c := &etcdv1beta2.EtcdCluster{}
	key := client.ObjectKey{Namespace: ns, Name: "main"}
	if err := k8s.Get(t.Context(), key, c); err != nil {
		t.Fatal(err)
	}
	minFree := resource.MustParse("1Mi")
	c.Spec.Maintenance = &etcdv1beta2.MaintenanceSpec{Defragmentation: &etcdv1beta2.DefragmentationSpec{Schedule: "0 3 * * 0", FragmentedPercent: ptr.To[int32](40), MinFreeBytes: &minFree}}
	if err := k8s.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}

	r := run(t.Context(), now, ns, "defrag", "main")
	t.Log("\n" + r.out + r.err)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (nothing was requested); stderr %q", r.code, r.err)
	}
	mustContain(t, r.out, "Nothing was requested: the etcd operator owns defragmentation and its API has no on-demand trigger",
		"Threshold: 40% of the file free and at least 1.0 MiB, at most once per member every 10m",
		`Rounds: "0 3 * * 0" (UTC); last round 2026-11-22T03:00:05Z, next 2026-11-29T03:00:00Z`,
		"main-0 Follower 100.0 MiB 40.0 MiB 60% never yes: 60% free >= 40%",
		"main-1 Leader 100.0 MiB 90.0 MiB 10% never no: 10% free < 40%",
		"main-2 Follower 100.0 MiB 10.0 MiB 90% 3m ago no: threshold met; not before 2026-11-27T05:07:00Z (once per 10m)")

	r = run(t.Context(), now, ns, "defrag", "main", "-o", "json")
	var rep defragReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("-o json does not parse: %v\n%s", err, r.out)
	}
	if r.code != 1 || rep.Requested || len(rep.Members) != 3 || !rep.Members[0].Due || rep.Members[1].Due || rep.Members[2].Due || rep.FragmentedPercent != 40 {
		t.Errorf("-o json: exit %d, %+v", r.code, rep)
	}

	after := &etcdv1beta2.EtcdCluster{}
	if err := k8s.Get(t.Context(), key, after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != c.ResourceVersion || len(after.Annotations) != 0 {
		t.Errorf("the cluster changed: resourceVersion %s -> %s, annotations %v", c.ResourceVersion, after.ResourceVersion, after.Annotations)
	}
}

// TestDefragScheduledRound: once a scheduled round is due, every member not defragmented since
// it became due is due whatever its fragmentation, and an unhealthy member is named as what
// blocks the operator's upkeep.
func TestDefragScheduledRound(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 5, 0, 0, time.UTC)
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "main", CreationTimestamp: metav1.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}},
		Spec:       etcdv1beta2.ClusterSpec{Maintenance: &etcdv1beta2.MaintenanceSpec{Defragmentation: &etcdv1beta2.DefragmentationSpec{Schedule: "0 3 * * 0"}}},
		Status: etcdv1beta2.ClusterStatus{
			LastDefragmentationRound: &metav1.Time{Time: time.Date(2026, 11, 22, 3, 1, 0, 0, time.UTC)},
			Members: etcdv1beta2.MembersStatus{Details: []etcdv1beta2.MemberStatus{
				{Name: "main-0", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100, DBSizeInUse: 100, Healthy: true, LastDefragmentationTime: ago(now, 2*time.Minute)},
				{Name: "main-1", Role: etcdv1beta2.MemberRoleLeader, DBSize: 100, DBSizeInUse: 100, Healthy: true},
				{Name: "main-2", Role: etcdv1beta2.MemberRoleUnknown},
			}},
		},
	}
	rep := planDefrag(c, now)
	if rep.Members[0].Due || !rep.Members[1].Due || rep.Members[1].Why != "the scheduled round of 2026-11-29T03:00:00Z" {
		t.Errorf("members %+v: want main-0 done in the round, main-1 due for it", rep.Members)
	}
	if rep.Blocked == "" || rep.NextRound == nil || !rep.NextRound.Equal(&metav1.Time{Time: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}) {
		t.Errorf("blocked %q, next round %v", rep.Blocked, rep.NextRound)
	}
}
