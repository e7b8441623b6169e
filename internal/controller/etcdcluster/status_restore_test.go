package etcdcluster

import (
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// TestClusterIDWaitsForEveryRestoredMember: a cluster whose members are all restored from the
// backup at once is taken over (its cluster ID recorded, after which members are judged and
// replaced) only once every one of them answers: two members that formed a quorum while the
// third is still starting do not make the third a lost member.
func TestClusterIDWaitsForEveryRestoredMember(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.ClusterSpec{Size: 3, Bootstrap: &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{
		RestoreName: "r", SeedMember: "db-0", Members: []string{"db-0", "db-1", "db-2"}}}}}
	obs := &observation{Observed: cluster.Observed{Reachable: true, Linearizable: true, ClusterID: 0xabc, Status: map[uint64]cluster.EndpointStatus{}}}
	for i, name := range []string{"db-0", "db-1", "db-2"} {
		obs.Members = append(obs.Members, cluster.Member{ID: uint64(i + 1), Name: name})
	}
	obs.Status[1] = cluster.EndpointStatus{MemberID: 1, Leader: 1, Version: "3.6.16"}
	obs.Status[2] = cluster.EndpointStatus{MemberID: 2, Leader: 1, Version: "3.6.16"}
	setObservedStatus(c, obs)
	if c.Status.ClusterID != "" {
		t.Fatalf("cluster ID %s recorded with db-2 still starting", c.Status.ClusterID)
	}
	obs.Status[3] = cluster.EndpointStatus{MemberID: 3, Leader: 1, Version: "3.6.16"}
	setObservedStatus(c, obs)
	if c.Status.ClusterID != "abc" {
		t.Fatalf("cluster ID %q once every restored member answers, want abc", c.Status.ClusterID)
	}
}
