package retention

import (
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Two Kubernetes clusters with the same namespace and cluster name, sharing a prefix (issue 30
// item 5): each has its own etcd cluster ID.
const kubeEast, kubeWest = "00000000000000ea", "00000000000000eb"

var idAWest = snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa3}

// inKube is the key of a backup of id written in Kubernetes cluster kube at t0 + hours.
func inKube(kube string, id snapshot.Identity, hours int, rev int64) string {
	return snapshot.ClusterKeyIn("p", id, kube, rev, t0.Add(time.Duration(hours)*time.Hour))
}

// TestSelectNeverCrossesKubernetesClusters: the same namespace and name backed up from two
// Kubernetes clusters under one prefix. Each one's retention deletes only its own backups,
// keeps its own newest, and leaves the backups without a Kubernetes identity (written before
// keys carried one) alone while the other's share the prefix. Before keys carried the
// Kubernetes identity, east's retention with maxBackups 1 deleted west's newest backup.
func TestSelectNeverCrossesKubernetesClusters(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	for _, tc := range []struct {
		name         string
		keys         []string
		kube         string
		owner        snapshot.Identity
		want         []string
		unattributed []string
	}{
		{name: "east keeps its newest, west's untouched", kube: kubeEast, owner: idA,
			keys: []string{inKube(kubeEast, idA, 0, 10), inKube(kubeWest, idAWest, 1, 11), inKube(kubeEast, idA, 2, 20), inKube(kubeWest, idAWest, 3, 21)},
			want: []string{inKube(kubeEast, idA, 0, 10)}},
		{name: "west keeps its newest, east's untouched", kube: kubeWest, owner: idAWest,
			keys: []string{inKube(kubeEast, idA, 0, 10), inKube(kubeWest, idAWest, 1, 11), inKube(kubeEast, idA, 2, 20), inKube(kubeWest, idAWest, 3, 21)},
			want: []string{inKube(kubeWest, idAWest, 1, 11)}},
		{name: "keys without a Kubernetes identity are kept while another Kubernetes cluster's share the prefix", kube: kubeEast, owner: idA,
			keys:         []string{tagged(idA, 0, 5), inKube(kubeWest, idAWest, 1, 11), inKube(kubeEast, idA, 2, 20), inKube(kubeEast, idA, 3, 30)},
			want:         []string{inKube(kubeEast, idA, 2, 20)},
			unattributed: []string{tagged(idA, 0, 5)}},
		{name: "keys without a Kubernetes identity are the owner's while no other Kubernetes cluster's are there", kube: kubeEast, owner: idA,
			keys: []string{tagged(idA, 0, 5), tagged(idA, 1, 6), inKube(kubeEast, idA, 2, 20)},
			want: []string{tagged(idA, 1, 6), tagged(idA, 0, 5)}},
		{name: "an operator that cannot read its Kubernetes identity never deletes a key that carries one", kube: "", owner: idA,
			keys: []string{inKube(kubeEast, idA, 0, 10), tagged(idA, 1, 11), tagged(idA, 2, 12)},
			want: []string{tagged(idA, 1, 11)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newest := tc.keys[len(tc.keys)-1]
			d := Select(Request{Prefix: "p", Owner: tc.owner, Kube: tc.kube, Protect: newest, Policy: Policy{MaxBackups: 1}, Now: now}, listing(tc.keys...))
			if !slices.Equal(d.Delete, tc.want) {
				t.Errorf("delete %v, want %v", d.Delete, tc.want)
			}
			if !slices.Equal(d.Unattributed, tc.unattributed) {
				t.Errorf("unattributed %v, want %v", d.Unattributed, tc.unattributed)
			}
		})
	}
}

// TestNewestPrefersThisKubernetesCluster: a restore chooses the newest backup its own
// Kubernetes cluster wrote, else the one other Kubernetes cluster's, and refuses to choose
// between two others.
func TestNewestPrefersThisKubernetesCluster(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	nameA := func(id snapshot.Identity) bool { return id.Namespace == "ns" && id.Cluster == "a" }
	for _, tc := range []struct {
		name  string
		keys  []string
		kube  string
		want  string
		kubes []string
	}{
		{name: "its own, not the newer one of another Kubernetes cluster", kube: kubeEast,
			keys: []string{inKube(kubeEast, idA, 1, 10), inKube(kubeWest, idAWest, 2, 20)}, want: inKube(kubeEast, idA, 1, 10)},
		{name: "a rebuilt Kubernetes cluster: the one other's newest", kube: "00000000000000ff",
			keys: []string{inKube(kubeEast, idA, 1, 10), inKube(kubeEast, idA, 2, 20)}, want: inKube(kubeEast, idA, 2, 20)},
		{name: "two others: none", kube: "00000000000000ff",
			keys: []string{inKube(kubeEast, idA, 1, 10), inKube(kubeWest, idAWest, 2, 20)}, kubes: []string{kubeWest, kubeEast}},
		{name: "without identities on either side: the newest, as before", kube: "",
			keys: []string{tagged(idA, 1, 10), tagged(idA, 2, 20)}, want: tagged(idA, 2, 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, kubes, ok := Newest("p", listing(tc.keys...), now, tc.kube, nameA)
			if tc.want == "" {
				if ok || !slices.Equal(kubes, tc.kubes) {
					t.Fatalf("Newest = %s, %t, kubes %v; want none, kubes %v", b.Key, ok, kubes, tc.kubes)
				}
				return
			}
			if !ok || b.Key != tc.want {
				t.Fatalf("Newest = %s, %t; want %s", b.Key, ok, tc.want)
			}
		})
	}
}
