package capture

import (
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// keyTimeRange is the span of times a key can hold: snapshot.KeyTimeFormat has a four-digit
// year.
var keyTimeRange = [2]time.Time{
	time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
}

// FuzzSegmentKey: a key built by SegmentKey for any prefix, identity, revisions and time parses
// back to the same (time at second precision), and never as a backup key.
func FuzzSegmentKey(f *testing.F) {
	for _, s := range []struct {
		prefix, ns, cluster string
		id                  uint64
		first, last         int64
	}{
		{"dir/etcd.backup", "prod", "main", 0x8e9e05c52164694d, 12346, 12399},
		{"a_b/c_d", "team-a", "db.v2", 1, 1, 1},
		{"p", "ns", snapshot.UnknownCluster, 1<<64 - 1, 1<<63 - 1, 1<<63 - 1},
		{"x.segments/y_z_0000000000000001", "ns", "a", 0, 2, 3},
		{"p_20260101T000000Z_v00000000000000000007", "ns", "b", 2, 8, 8},
	} {
		f.Add(s.prefix, s.ns, s.cluster, s.id, s.first, s.last, t0.Unix(), uint32(t0.Nanosecond()), int16(60))
	}
	f.Fuzz(func(t *testing.T, prefix, ns, cluster string, clusterID uint64, first, last, sec int64, nsec uint32, offsetMin int16) {
		zone := time.FixedZone("fuzz", int(offsetMin%(18*60))*60)
		at := time.Unix(sec, int64(nsec%1e9)).In(zone)
		// Outside SegmentKey's domain: an empty prefix, revisions below 1 or out of order, a
		// year that is not four digits. Names are made valid rather than skipped.
		if prefix == "" || first < 1 || last < first || at.Before(keyTimeRange[0]) || at.After(keyTimeRange[1]) {
			t.Skip()
		}
		id := snapshot.Identity{Namespace: fuzzName(ns), Cluster: snapshot.UnknownCluster, ClusterID: clusterID}
		if cluster != snapshot.UnknownCluster {
			id.Cluster = fuzzName(cluster)
		}
		key := SegmentKey(prefix, id, first, last, at)
		p, info, ok := ParseSegmentKey(key)
		if !ok || p != prefix || info.Identity != id || info.First != first || info.Last != last ||
			!info.Time.Equal(at.UTC().Truncate(time.Second)) || info.Time.Location() != time.UTC {
			t.Fatalf("ParseSegmentKey(%q) = %q, %+v, %t", key, p, info, ok)
		}
		if !strings.HasPrefix(key, SegmentDir(prefix, id)) {
			t.Fatalf("%q not under %q", key, SegmentDir(prefix, id))
		}
		if bp, binfo, ok := snapshot.SplitKey(key); ok {
			t.Fatalf("snapshot.SplitKey(%q) = %q, %+v: a segment parses as a backup", key, bp, binfo)
		}
	})
}

// FuzzParseSegmentKey: any string ParseSegmentKey accepts is exactly the key SegmentKey writes
// for what it parsed (one key per segment), and no string is both a segment and a backup key.
func FuzzParseSegmentKey(f *testing.F) {
	good := SegmentKey("etcd.backup", testID, 5, 9, t0)
	for _, key := range []string{
		good,
		SegmentKey("a/b_c", snapshot.Identity{Namespace: "n", Cluster: "-", ClusterID: 1}, 1, 1<<63-1, t0),
		snapshot.ClusterKey("etcd.backup", testID, 7, t0),
		good + ".tmp",
		strings.Replace(good, "-", "_", 1),
		strings.Replace(good, "0000000000000000000", "9999999999999999999", 1),
		".segments/prod_main_8e9e05c52164694d/00000000000000000005-00000000000000000009_20260329T013005Z.seg",
	} {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		prefix, info, ok := ParseSegmentKey(key)
		if _, _, backup := snapshot.SplitKey(key); ok && backup {
			t.Fatalf("%q parses both as a segment and as a backup key", key)
		}
		if !ok {
			if prefix != "" || info != (SegmentInfo{}) {
				t.Fatalf("ParseSegmentKey(%q) rejected but returned %q, %+v", key, prefix, info)
			}
			return
		}
		if info.First < 1 || info.Last < info.First || info.Time.Location() != time.UTC || info.Time.Nanosecond() != 0 {
			t.Fatalf("ParseSegmentKey(%q) = %+v: revisions out of range or a time that is not whole UTC seconds", key, info)
		}
		if again := SegmentKey(prefix, info.Identity, info.First, info.Last, info.Time); again != key {
			t.Fatalf("ParseSegmentKey(%q) = %q, %+v, which renders as %q", key, prefix, info, again)
		}
	})
}

// fuzzName maps s onto a Kubernetes object name: lower case, other bytes become "-", an
// alphanumeric at both ends, at most 253 bytes.
func fuzzName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !isAlnum(c) && c != '.' {
			b[i] = '-'
		}
	}
	return string(append(append([]byte("a"), b[:min(len(b), 251)]...), 'z'))
}

func isAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
