package capture

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

func TestSegmentKeyRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 29, 1, 30, 5, 999, time.FixedZone("CET", 3600))
	key := SegmentKey("dir/etcd.backup", testID, 12346, 12399, at)
	want := "dir/etcd.backup.segments/prod_main_8e9e05c52164694d/00000000000000012346-00000000000000012399_20260329T003005Z.seg"
	if key != want {
		t.Fatalf("SegmentKey = %q, want %q", key, want)
	}
	if !strings.HasPrefix(key, SegmentDir("dir/etcd.backup", testID)) {
		t.Fatalf("%q is not under SegmentDir %q", key, SegmentDir("dir/etcd.backup", testID))
	}
	for _, id := range []snapshot.Identity{testID, {Namespace: "ns", Cluster: snapshot.UnknownCluster, ClusterID: 1}} {
		for _, r := range [][2]int64{{1, 1}, {2, 99}, {1<<63 - 1, 1<<63 - 1}} {
			key := SegmentKey("a_b/c.d", id, r[0], r[1], at)
			p, info, ok := ParseSegmentKey(key)
			if !ok || p != "a_b/c.d" || info.Identity != id || info.First != r[0] || info.Last != r[1] || !info.Time.Equal(at.Truncate(time.Second)) {
				t.Fatalf("ParseSegmentKey(%q) = %q, %+v, %t", key, p, info, ok)
			}
		}
	}
}

// TestSegmentKeysSortByFirstRevision: string order is first-revision order across digit
// counts, whatever the times.
func TestSegmentKeysSortByFirstRevision(t *testing.T) {
	var keys []string
	for i, r := range [][2]int64{{8, 9}, {10, 99}, {100, 100}, {101, 999}, {1000, 99999}, {100000, 100001}} {
		keys = append(keys, SegmentKey("b", testID, r[0], r[1], t0.Add(-time.Duration(i)*time.Hour)))
	}
	if sorted := slices.Sorted(slices.Values(keys)); !slices.Equal(keys, sorted) {
		t.Fatalf("string order differs from revision order:\n%s", strings.Join(sorted, "\n"))
	}
}

// TestSegmentKeysAreNotBackupKeys: retention and backup selection list the backup prefix,
// which holds the segments too, and must see only the backups.
func TestSegmentKeysAreNotBackupKeys(t *testing.T) {
	now := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	backupKey := snapshot.ClusterKey("etcd.backup", testID, 12345, now.Add(-time.Hour))
	var infos []backend.ObjectInfo
	for _, prefix := range []string{"etcd.backup", "dir/etcd.backup", "p_20260101T000000Z_v00000000000000000007"} {
		for _, r := range [][2]int64{{1, 1}, {12346, 12399}, {1<<63 - 1, 1<<63 - 1}} {
			key := SegmentKey(prefix, testID, r[0], r[1], now)
			if p, info, ok := snapshot.SplitKey(key); ok {
				t.Errorf("snapshot.SplitKey(%q) = %q, %+v: a segment parses as a backup", key, p, info)
			}
			if info, ok := snapshot.ParseKey(prefix, key); ok {
				t.Errorf("snapshot.ParseKey(%q, %q) = %+v", prefix, key, info)
			}
			infos = append(infos, backend.ObjectInfo{Key: key, ModTime: now})
		}
	}
	infos = append(infos, backend.ObjectInfo{Key: backupKey, ModTime: now})
	backend.SortObjects(infos)
	if got := retention.ParseAt("etcd.backup", infos, now); len(got) != 1 || got[0].Key != backupKey {
		t.Fatalf("retention.ParseAt = %+v, want only %s", got, backupKey)
	}
	b, _, _, ok := retention.Newest("etcd.backup", infos, now, "", func(snapshot.Identity) bool { return true })
	if !ok || b.Key != backupKey {
		t.Fatalf("retention.Newest = %+v, %t, want %s", b, ok, backupKey)
	}
	if _, _, ok := ParseSegmentKey(backupKey); ok {
		t.Fatalf("ParseSegmentKey accepted the backup key %q", backupKey)
	}
}

func TestParseSegmentKeyRejects(t *testing.T) {
	good := SegmentKey("etcd.backup", testID, 5, 9, t0)
	dir := SegmentDir("etcd.backup", testID)
	for _, key := range []string{
		"",
		good + ".tmp",
		strings.TrimSuffix(good, ".seg"),
		".segments/prod_main_8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg", // empty prefix
		"etcd.backup/prod_main_8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		"etcd.backup.segments/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		dir + "00000000000000000009-00000000000000000005_20260329T013005Z.seg", // last < first
		dir + "00000000000000000000-00000000000000000005_20260329T013005Z.seg", // revision 0
		dir + "0000000000000000005-000000000000000000009_20260329T013005Z.seg",
		dir + "00000000000000000005_00000000000000000009_20260329T013005Z.seg",
		dir + "00000000000000000005-00000000000000000009-20260329T013005Z.seg",
		dir + "0000000000000000000x-00000000000000000009_20260329T013005Z.seg",
		dir + "-0000000000000000005-00000000000000000009_20260329T013005Z.seg",
		dir + "99999999999999999999-99999999999999999999_20260329T013005Z.seg", // above int64
		dir + "00000000000000000005-00000000000000000009_20261329T013005Z.seg", // month 13
		"etcd.backup.segments/prod_main_8E9E05C52164694D/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		"etcd.backup.segments/Prod_main_8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		"etcd.backup.segments/prod__8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		"etcd.backup.segments/x_prod_main_8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
		"etcd.backup.segments/prod_main_8e9e05c5216469/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
	} {
		if p, info, ok := ParseSegmentKey(key); ok {
			t.Errorf("ParseSegmentKey(%q) = %q, %+v", key, p, info)
		}
	}
}
