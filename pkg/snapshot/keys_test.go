package snapshot

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestObjectKeyRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 29, 1, 30, 5, 999, time.FixedZone("CET", 3600))
	for _, rev := range []int64{0, 1, 99, 100, 9_999_999, 1<<63 - 1} {
		key := ObjectKey("dir/etcd.backup", rev, at)
		info, ok := ParseKey("dir/etcd.backup", key)
		if !ok || info.Revision != rev || !info.Time.Equal(at.Truncate(time.Second)) {
			t.Fatalf("ParseKey(%q) = %+v, %t", key, info, ok)
		}
	}
	if got := ObjectKey("p", 12345, at); got != "p_20260329T003005Z_v00000000000000012345" {
		t.Fatalf("ObjectKey = %q", got)
	}
}

func TestKeysSortByTimeAcrossRevisionDigits(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var keys []string
	for i, rev := range []int64{8, 9, 10, 99, 100, 999, 1000, 99999, 100000} {
		keys = append(keys, ObjectKey("b", rev, base.Add(time.Duration(i)*time.Minute)))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	if !slices.Equal(keys, sorted) {
		t.Fatalf("string order differs from time order:\n%s", strings.Join(sorted, "\n"))
	}
	for i := 1; i < len(keys); i++ {
		a, _ := ParseKey("b", keys[i-1])
		b, _ := ParseKey("b", keys[i])
		if a.Revision >= b.Revision || !a.Time.Before(b.Time) {
			t.Fatalf("parsed order wrong: %+v then %+v", a, b)
		}
	}
}

// TestParseKeyReadsCoreosPeriodicKeys (issue 32): the keys coreos/etcd-operator's periodic
// backups wrote under a prefix are read as legacy backups of that prefix (no identity), with
// their revision and time, so that retention and Newest count them as the cluster's.
func TestParseKeyReadsCoreosPeriodicKeys(t *testing.T) {
	at := time.Date(2019, 5, 1, 2, 0, 0, 0, time.UTC)
	key := "etcd.backup_v12345_2019-05-01-02:00:00"
	if got := CoreosKey("etcd.backup", 12345, at); got != key {
		t.Fatalf("CoreosKey = %q, want %q", got, key)
	}
	info, ok := ParseKey("etcd.backup", key)
	if !ok || info.Revision != 12345 || !info.Time.Equal(at) || info.Tagged() || !info.Coreos {
		t.Fatalf("ParseKey(%q) = %+v, %t", key, info, ok)
	}
	if prefix, _, ok := SplitKey("dir/etcd.backup_v1_2019-05-01-02:00:00"); !ok || prefix != "dir/etcd.backup" {
		t.Fatalf("SplitKey: prefix %q, %t", prefix, ok)
	}
}

func TestParseKeyRejectsForeignKeys(t *testing.T) {
	good := ObjectKey("etcd.backup", 7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, key := range []string{
		"etcd.backup",                                         // one-shot object
		"etcd.backup_v07_2026-01-01-00:00:00",                 // coreos format, not as coreos writes it
		"etcd.backup2_v7_2026-01-01-00:00:00",                 // coreos format, other prefix
		"etcd.backup2_20260101T000000Z_v00000000000000000007", // other prefix
		"other_20260101T000000Z_v00000000000000000007",
		"etcd.backup_20260101T000000Z_v7",                    // unpadded
		"etcd.backup_20261301T000000Z_v00000000000000000007", // month 13
		"etcd.backup_20260101T000000Z_v0000000000000000000x",
		"etcd.backup_20260101T000000Z_v-0000000000000000007",
		good + ".tmp",
		good + "_ns_a_000000000000000",  // cluster ID too short
		good + "_ns_a_000000000000000G", // not hex
		good + "_ns_a_000000000000000A", // upper case
		good + "_NS_a_0000000000000001", // not a Kubernetes name
		good + "_ns__0000000000000001",  // empty cluster name
		good + "_a_0000000000000001",    // namespace missing
		good + "_ns_a_0000000000000001_x",
	} {
		if info, ok := ParseKey("etcd.backup", key); ok {
			t.Errorf("ParseKey(%q) = %+v, want not ours", key, info)
		}
	}
	if _, ok := ParseKey("etcd.backup", good); !ok {
		t.Fatalf("ParseKey(%q) rejected", good)
	}
}

// TestClusterKeyRoundTrip: every field of an identity-tagged key parses back, under prefixes
// that themselves hold "_" and "/" and with the largest cluster ID.
func TestClusterKeyRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 29, 1, 30, 5, 999, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		prefix string
		id     Identity
		rev    int64
	}{
		{"dir/etcd.backup", Identity{Namespace: "prod", Cluster: "main", ClusterID: 0x8e9e05c52164694d}, 12345},
		{"a_b/c_d", Identity{Namespace: "team-a", Cluster: "db.v2", ClusterID: 1}, 0},
		{"p", Identity{Namespace: "ns", Cluster: UnknownCluster, ClusterID: 1<<64 - 1}, 1<<63 - 1},
	} {
		key := ClusterKey(tc.prefix, tc.id, tc.rev, at)
		info, ok := ParseKey(tc.prefix, key)
		if !ok || info.Revision != tc.rev || !info.Time.Equal(at.Truncate(time.Second)) || info.Identity != tc.id {
			t.Fatalf("ParseKey(%q) = %+v, %t; want %+v", key, info, ok, tc.id)
		}
		prefix, info2, ok := SplitKey(key)
		if !ok || prefix != tc.prefix || info2 != info {
			t.Fatalf("SplitKey(%q) = %q, %+v, %t", key, prefix, info2, ok)
		}
	}
	id := Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xabc}
	if got := ClusterKey("p", id, 12345, at); got != "p_20260329T003005Z_v00000000000000012345_prod_main_0000000000000abc" {
		t.Fatalf("ClusterKey = %q", got)
	}
}

// TestLegacyKeysStillParse: keys written before they carried an identity parse with a zero
// Identity, under their exact prefix and through SplitKey.
func TestLegacyKeysStillParse(t *testing.T) {
	at := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	for _, key := range []string{
		"etcd.backup_20260101T020000Z_v00000000000000012345",
		ObjectKey("etcd.backup", 12345, at),
	} {
		info, ok := ParseKey("etcd.backup", key)
		if !ok || info.Revision != 12345 || !info.Time.Equal(at) || info.Tagged() || info.Identity != (Identity{}) {
			t.Fatalf("ParseKey(%q) = %+v, %t", key, info, ok)
		}
		if p, _, ok := SplitKey(key); !ok || p != "etcd.backup" {
			t.Fatalf("SplitKey(%q) = %q, %t", key, p, ok)
		}
	}
}

// TestKeysOfTwoClustersDiffer: two clusters backed up at the same revision in the same second
// under one prefix never get the same key (the overwrite of reproduction 2).
func TestKeysOfTwoClustersDiffer(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := ClusterKey("shared/etcd.backup", Identity{Namespace: "ns", Cluster: "a", ClusterID: 0x11}, 7, at)
	b := ClusterKey("shared/etcd.backup", Identity{Namespace: "ns", Cluster: "b", ClusterID: 0x22}, 7, at)
	unknownA := ClusterKey("shared/etcd.backup", Identity{Namespace: "ns", Cluster: UnknownCluster, ClusterID: 0x11}, 7, at.Add(999*time.Millisecond))
	otherNS := ClusterKey("shared/etcd.backup", Identity{Namespace: "ns2", Cluster: "a", ClusterID: 0x11}, 7, at)
	if len(map[string]bool{a: true, b: true, unknownA: true, otherNS: true}) != 4 {
		t.Fatalf("keys collide: %s %s %s %s", a, b, unknownA, otherNS)
	}
}

// TestKeysOfTwoKubernetesClustersDiffer (issue 30 item 5): the same namespace and cluster name
// backed up in two Kubernetes clusters at the same revision and second get two keys, each
// naming its Kubernetes cluster, and a key without one still parses.
func TestKeysOfTwoKubernetesClustersDiffer(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := Identity{Namespace: "etcd", Cluster: "main", ClusterID: 0x11}
	east := ClusterKeyIn("shared/etcd.backup", id, "00000000000000ea", 7, at)
	west := ClusterKeyIn("shared/etcd.backup", id, "00000000000000eb", 7, at)
	if east == west {
		t.Fatalf("keys collide: %s", east)
	}
	for key, kube := range map[string]string{east: "00000000000000ea", west: "00000000000000eb", ClusterKey("shared/etcd.backup", id, 7, at): ""} {
		info, ok := ParseKey("shared/etcd.backup", key)
		if !ok || info.Identity != id || info.Kube != kube || info.Revision != 7 {
			t.Errorf("ParseKey(%q) = %+v, %t; want %v in Kubernetes cluster %q", key, info, ok, id, kube)
		}
	}
	if want := "shared/etcd.backup_20260101T000000Z_v00000000000000000007_etcd_main_0000000000000011_k00000000000000ea"; east != want {
		t.Errorf("ClusterKeyIn = %q, want %q", east, want)
	}
}

func TestIdentitySame(t *testing.T) {
	id := func(ns, c string, cid uint64) Identity { return Identity{Namespace: ns, Cluster: c, ClusterID: cid} }
	for _, tc := range []struct {
		a, b Identity
		want bool
	}{
		{id("ns", "a", 1), id("ns", "a", 1), true},
		{id("ns", "a", 1), id("ns", "a", 2), true}, // restored: same name, new ID
		{id("ns", "a", 1), id("ns", "b", 1), false},
		{id("ns", "a", 1), id("ns2", "a", 1), false},
		{id("ns", "a", 1), id("ns", UnknownCluster, 1), true},
		{id("ns", UnknownCluster, 1), id("ns", "a", 2), false},
		{id("ns", UnknownCluster, 1), id("ns", UnknownCluster, 1), true},
		{id("ns", UnknownCluster, 1), id("ns2", UnknownCluster, 1), false},
		{Identity{}, Identity{}, false},
		{Identity{}, id("ns", "a", 1), false},
	} {
		if got := tc.a.Same(tc.b); got != tc.want || tc.b.Same(tc.a) != tc.want {
			t.Errorf("%v.Same(%v) = %t, want %t (both ways)", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestPick(t *testing.T) {
	ms := []Member{
		{Endpoint: "a", Revision: 10, IsLeader: true},
		{Endpoint: "b", Revision: 12, IsLeader: true},
		{Endpoint: "c", Revision: 12},
		{Endpoint: "d", Revision: 50, Err: errTest},
	}
	m, err := Pick(ms)
	if err != nil || m.Endpoint != "c" {
		t.Fatalf("Pick = %+v, %v; want c (highest healthy revision, follower on tie)", m, err)
	}
	if _, err := Pick([]Member{{Endpoint: "x", Err: errTest}}); err == nil {
		t.Fatal("Pick of unhealthy members succeeded")
	}
}

func TestDefaultTimeout(t *testing.T) {
	if got := DefaultTimeout(1 << 20); got != MinTimeout {
		t.Fatalf("DefaultTimeout(1MiB) = %s", got)
	}
	if got := DefaultTimeout(8 << 30); got != 8<<30/(5<<20)*3*time.Second {
		t.Fatalf("DefaultTimeout(8GiB) = %s", got)
	}
}

var errTest = errorString("unreachable")

type errorString string

func (e errorString) Error() string { return string(e) }
