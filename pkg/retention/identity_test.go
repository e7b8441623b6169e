package retention

import (
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

var (
	idA       = snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa}
	idB       = snapshot.Identity{Namespace: "ns", Cluster: "b", ClusterID: 0xb}
	idAOther  = snapshot.Identity{Namespace: "other", Cluster: "a", ClusterID: 0xa2}
	idUnknown = snapshot.Identity{Namespace: "ns", Cluster: snapshot.UnknownCluster, ClusterID: 0xa} // a's ID, name not found
)

// tagged is the key of a backup of id at t0 + hours.
func tagged(id snapshot.Identity, hours int, rev int64) string {
	return snapshot.ClusterKey("p", id, rev, t0.Add(time.Duration(hours)*time.Hour))
}

func legacy(hours int, rev int64) string { return key("p", hours, rev) }

// coreos is the key coreos/etcd-operator's periodic backup wrote at t0 + hours.
func coreos(hours int, rev int64) string {
	return snapshot.CoreosKey("p", rev, t0.Add(time.Duration(hours)*time.Hour))
}

// listing returns keys as a sorted store listing with ModTime equal to the key's time.
func listing(keys ...string) []backend.ObjectInfo {
	var out []backend.ObjectInfo
	for _, k := range keys {
		info, _ := snapshot.ParseKey("p", k)
		out = append(out, backend.ObjectInfo{Key: k, ModTime: info.Time})
	}
	backend.SortObjects(out)
	return out
}

// TestSelectTwoClustersUnderOnePrefix is reproduction 2: clusters a and b write periodic backups
// under one prefix with maxBackups 1; each one's retention keeps its own newest backup and never
// deletes the other's (today a's retention deleted b's newest and the other way round).
func TestSelectTwoClustersUnderOnePrefix(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	cases := []struct {
		name       string
		keys       []string
		owner      snapshot.Identity
		protect    string
		policy     Policy
		want       []string
		legacyKept []string
	}{
		{name: "a keeps its newest, b's untouched", owner: idA, protect: tagged(idA, 4, 40),
			keys:   []string{tagged(idA, 0, 10), tagged(idB, 1, 11), tagged(idA, 2, 20), tagged(idB, 3, 21), tagged(idA, 4, 40)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idA, 2, 20), tagged(idA, 0, 10)}},
		{name: "b keeps its newest, a's untouched", owner: idB, protect: tagged(idB, 3, 21),
			keys:   []string{tagged(idA, 0, 10), tagged(idB, 1, 11), tagged(idA, 2, 20), tagged(idB, 3, 21), tagged(idA, 4, 40)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idB, 1, 11)}},
		{name: "same revision and second, two objects", owner: idA, protect: tagged(idA, 1, 7),
			keys:   []string{tagged(idA, 1, 7), tagged(idB, 1, 7)},
			policy: Policy{MaxBackups: 1}, want: nil},
		{name: "max age only ages own backups", owner: idB, protect: tagged(idB, 9, 90),
			keys:   []string{tagged(idA, 0, 1), tagged(idB, 1, 2), tagged(idA, 9, 3), tagged(idB, 9, 90)},
			policy: Policy{MaxAge: time.Hour}, want: []string{tagged(idB, 1, 2)}},
		{name: "same name in another namespace is another cluster", owner: idA, protect: tagged(idA, 3, 30),
			keys:   []string{tagged(idAOther, 0, 1), tagged(idA, 1, 2), tagged(idAOther, 2, 3), tagged(idA, 3, 30)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idA, 1, 2)}},
		{name: "unknown name, same cluster ID is a's", owner: idA, protect: tagged(idA, 3, 30),
			keys:   []string{tagged(idUnknown, 0, 1), tagged(idB, 1, 2), tagged(idA, 3, 30)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idUnknown, 0, 1)}},
		{name: "restored a (new cluster ID) ages out the old incarnation's backups", owner: snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa3},
			protect: snapshot.ClusterKey("p", snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa3}, 5, t0.Add(5*time.Hour)),
			keys:    []string{tagged(idA, 0, 10), tagged(idB, 1, 11), snapshot.ClusterKey("p", snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa3}, 5, t0.Add(5*time.Hour))},
			policy:  Policy{MaxBackups: 1}, want: []string{tagged(idA, 0, 10)}},
		// Legacy keys: another cluster's tagged backups make them ambiguous, so they stay.
		{name: "legacy ambiguous with b present", owner: idA, protect: tagged(idA, 5, 50),
			keys:   []string{legacy(0, 1), legacy(1, 2), tagged(idB, 2, 3), tagged(idA, 3, 4), tagged(idA, 5, 50)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idA, 3, 4)}, legacyKept: []string{legacy(1, 2), legacy(0, 1)}},
		{name: "legacy with only own tagged backups are retained", owner: idA, protect: tagged(idA, 5, 50),
			keys:   []string{legacy(0, 1), legacy(1, 2), tagged(idA, 3, 4), tagged(idA, 5, 50)},
			policy: Policy{MaxBackups: 2}, want: []string{legacy(1, 2), legacy(0, 1)}},
		// A coreos cluster taken over (issue 32): its EtcdBackup goes on under the same prefix,
		// and the coreos periodic backups there age out with the new ones, oldest first.
		{name: "coreos periodic backups count as the cluster's", owner: idA, protect: tagged(idA, 5, 50),
			keys:   []string{coreos(0, 1), coreos(1, 2), tagged(idA, 3, 4), tagged(idA, 5, 50)},
			policy: Policy{MaxBackups: 3}, want: []string{coreos(0, 1)}},
		{name: "coreos periodic backups kept while another cluster shares the prefix", owner: idA, protect: tagged(idA, 5, 50),
			keys:   []string{coreos(0, 1), tagged(idB, 2, 3), tagged(idA, 3, 4), tagged(idA, 5, 50)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idA, 3, 4)}, legacyKept: []string{coreos(0, 1)}},
		{name: "own newest kept even when a legacy key is newer", owner: idA, protect: "",
			keys:   []string{tagged(idA, 1, 4), tagged(idA, 2, 5), legacy(3, 6)},
			policy: Policy{MaxBackups: 1}, want: []string{tagged(idA, 1, 4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Select(Request{Prefix: "p", Owner: tc.owner, Protect: tc.protect, Policy: tc.policy, Now: now}, listing(tc.keys...))
			if !slices.Equal(d.Delete, tc.want) || !slices.Equal(d.LegacyKept, tc.legacyKept) {
				t.Fatalf("delete %v, legacy kept %v\nwant %v, %v", d.Delete, d.LegacyKept, tc.want, tc.legacyKept)
			}
		})
	}
}

// TestSelectFutureTimestamp: a backup whose key lies in the future (the writer's clock ran
// ahead) does not stay the newest: it ages by the store's ModTime, or counts as the oldest
// without one. Up to MaxClockSkew ahead, the key's time is trusted.
func TestSelectFutureTimestamp(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	future := snapshot.ClusterKey("p", idA, 5, now.Add(365*24*time.Hour))
	slightlyAhead := tagged(idA, 10, 9) // at now
	current := tagged(idA, 9, 8)
	cases := []struct {
		name    string
		infos   []backend.ObjectInfo
		protect string
		want    []string
	}{
		{"ModTime says it is old", []backend.ObjectInfo{
			{Key: future, ModTime: t0.Add(time.Hour)}, {Key: current, ModTime: t0.Add(9 * time.Hour)},
		}, current, []string{future}},
		{"no ModTime: oldest", []backend.ObjectInfo{
			{Key: future}, {Key: current, ModTime: t0.Add(9 * time.Hour)},
		}, current, []string{future}},
		{"within the allowed skew it is newest", []backend.ObjectInfo{
			{Key: snapshot.ClusterKey("p", idA, 9, now.Add(4*time.Minute))}, {Key: current, ModTime: t0.Add(9 * time.Hour)},
		}, "", []string{current}},
		{"ModTime later than the key: the key's time", []backend.ObjectInfo{
			{Key: future, ModTime: now.Add(400 * 24 * time.Hour)}, {Key: slightlyAhead, ModTime: now},
		}, slightlyAhead, nil}, // future stays newest by its key (the store's clock is ahead too)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backend.SortObjects(tc.infos)
			got := Select(Request{Prefix: "p", Owner: idA, Protect: tc.protect, Policy: Policy{MaxBackups: 1}, Now: now}, tc.infos).Delete
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Select = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNewest: the restore's backupSelection Newest picks the newest backup of the named
// cluster (any cluster ID), never another cluster's, and a future key only by its ModTime.
func TestNewest(t *testing.T) {
	now := t0.Add(10 * time.Hour)
	ofA := func(id snapshot.Identity) bool { return id.Namespace == "ns" && id.Cluster == "a" }
	restoredA := snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa3}
	cases := []struct {
		name   string
		infos  []backend.ObjectInfo
		want   string
		others []snapshot.Identity
	}{
		{"b's newer backup is not a's", listing(tagged(idA, 1, 10), tagged(idB, 2, 20)), tagged(idA, 1, 10), nil},
		{"any cluster ID", listing(tagged(idA, 1, 10), snapshot.ClusterKey("p", restoredA, 3, t0.Add(3*time.Hour))), snapshot.ClusterKey("p", restoredA, 3, t0.Add(3*time.Hour)), nil},
		{"legacy when no tagged key", listing(legacy(1, 1), legacy(2, 2)), legacy(2, 2), nil},
		{"coreos periodic backups when no tagged key", listing(coreos(1, 1), coreos(3, 3), legacy(2, 2)), coreos(3, 3), nil},
		{"a's tagged key before a newer legacy one", listing(legacy(5, 1), tagged(idA, 2, 2)), tagged(idA, 2, 2), nil},
		{"no legacy when another cluster's tagged key is there", listing(legacy(1, 1), tagged(idB, 2, 2), tagged(idUnknown, 3, 3)), "", []snapshot.Identity{idUnknown, idB}},
		{"only other namespaces", listing(tagged(idAOther, 1, 1)), "", []snapshot.Identity{idAOther}},
		{"future key with an old ModTime", []backend.ObjectInfo{
			{Key: snapshot.ClusterKey("p", idA, 99, now.Add(48*time.Hour)), ModTime: t0.Add(time.Hour)},
			{Key: tagged(idA, 5, 50), ModTime: t0.Add(5 * time.Hour)},
		}, tagged(idA, 5, 50), nil},
		{"future key without ModTime", []backend.ObjectInfo{
			{Key: snapshot.ClusterKey("p", idA, 99, now.Add(48*time.Hour))},
			{Key: tagged(idA, 5, 50), ModTime: t0.Add(5 * time.Hour)},
		}, tagged(idA, 5, 50), nil},
		{"nothing", listing(), "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, others, _, ok := Newest("p", tc.infos, now, "", ofA)
			if ok != (tc.want != "") || b.Key != tc.want || !slices.Equal(others, tc.others) {
				t.Fatalf("Newest = %q, %v, %t; want %q, %v", b.Key, others, ok, tc.want, tc.others)
			}
		})
	}
}

// TestApplyTwoClusters runs both clusters' retention in turn over the memory backend, as two
// periodic backups under one prefix do: each keeps its own newest object.
func TestApplyTwoClusters(t *testing.T) {
	b := memory.New()
	ctx := t.Context()
	newest := map[snapshot.Identity]string{}
	for round := range 6 {
		for _, id := range []snapshot.Identity{idA, idB} {
			k := tagged(id, round, int64(round))
			if err := b.Put(ctx, k, stringsReader("x")); err != nil {
				t.Fatal(err)
			}
			newest[id] = k
			req := Request{Prefix: "p", Owner: id, Protect: k, Policy: Policy{MaxBackups: 1}, Now: t0.Add(time.Duration(round) * time.Hour)}
			if _, err := Apply(ctx, b, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	left, err := b.List(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range left {
		keys = append(keys, o.Key)
	}
	want := []string{newest[idA], newest[idB]}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("left %v, want each cluster's newest %v", keys, want)
	}
}
