package snapshot

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// keyTimeRange is the span of times a key can hold: KeyTimeFormat has a four-digit year.
var keyTimeRange = [2]time.Time{
	time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
}

// fuzzTime is a moment from fuzz input, in a fixed zone of offsetMin minutes, so that keys are
// built from times that are not UTC too.
func fuzzTime(sec int64, nsec uint32, offsetMin int16) time.Time {
	zone := time.FixedZone("fuzz", int(offsetMin%(18*60))*60)
	return time.Unix(sec, int64(nsec%1e9)).In(zone)
}

// FuzzClusterKey: a key built by ClusterKey (or the legacy ObjectKey) for any prefix, identity,
// revision and time parses back to the same identity, revision and time (second precision),
// SplitKey returns the prefix, and ParseKey under any other prefix rejects it.
func FuzzClusterKey(f *testing.F) {
	at := time.Date(2026, 3, 29, 1, 30, 5, 999, time.UTC)
	for _, s := range []struct {
		prefix, ns, cluster string
		id                  uint64
		rev                 int64
	}{
		{"dir/etcd.backup", "prod", "main", 0x8e9e05c52164694d, 12345},
		{"a_b/c_d", "team-a", "db.v2", 1, 0},
		{"p", "ns", UnknownCluster, 1<<64 - 1, 1<<63 - 1},
		{"shared/etcd.backup", "ns2", "a", 0x11, 7},
		{"p_20260101T000000Z_v00000000000000000007_ns_a_0000000000000001", "ns", "b", 2, 8},
	} {
		f.Add(s.prefix, s.ns, s.cluster, s.id, s.rev, at.Unix(), uint32(at.Nanosecond()), int16(60))
	}
	f.Fuzz(func(t *testing.T, prefix, ns, cluster string, clusterID uint64, rev, sec int64, nsec uint32, offsetMin int16) {
		at := fuzzTime(sec, nsec, offsetMin)
		// Inputs outside ClusterKey's domain: keys are written only for a non-empty prefix, a
		// store revision (>= 0) and a time with a four-digit year. Names are made valid
		// Kubernetes names rather than skipped, so that most inputs test something.
		if prefix == "" || rev < 0 || at.Before(keyTimeRange[0]) || at.After(keyTimeRange[1]) {
			t.Skip()
		}
		ns = fuzzName(ns)
		if cluster != UnknownCluster {
			cluster = fuzzName(cluster)
		}
		id := Identity{Namespace: ns, Cluster: cluster, ClusterID: clusterID}
		want := KeyInfo{Time: at.UTC().Truncate(time.Second), Revision: rev, Identity: id}

		key := ClusterKey(prefix, id, rev, at)
		info, ok := ParseKey(prefix, key)
		if !ok || !sameKeyInfo(info, want) {
			t.Fatalf("ParseKey(%q, %q) = %+v, %t; want %+v", prefix, key, info, ok, want)
		}
		p, info, ok := SplitKey(key)
		if !ok || p != prefix || !sameKeyInfo(info, want) {
			t.Fatalf("SplitKey(%q) = %q, %+v, %t; want %q, %+v", key, p, info, ok, prefix, want)
		}
		if info, ok := ParseKey(prefix+"x", key); ok {
			t.Fatalf("ParseKey(%q, %q) = %+v under another prefix", prefix+"x", key, info)
		}

		// The same key in a known Kubernetes cluster.
		kube := fmt.Sprintf("%016x", clusterID^uint64(rev))
		inKube := want
		inKube.Kube = kube
		key = ClusterKeyIn(prefix, id, kube, rev, at)
		if info, ok := ParseKey(prefix, key); !ok || !sameKeyInfo(info, inKube) {
			t.Fatalf("ParseKey(%q, %q) = %+v, %t; want %+v", prefix, key, info, ok, inKube)
		}

		legacy := ObjectKey(prefix, rev, at)
		want.Identity = Identity{}
		if info, ok := ParseKey(prefix, legacy); !ok || !sameKeyInfo(info, want) || info.Tagged() {
			t.Fatalf("ParseKey(%q, legacy %q) = %+v, %t; want %+v", prefix, legacy, info, ok, want)
		}
	})
}

// FuzzSplitKey: any string SplitKey accepts is exactly the key ClusterKey (or ObjectKey, for a
// key without identity, or CoreosKey, for a coreos periodic backup's) writes for what it parsed: one key per backup, no second spelling that
// retention would read as the same backup.
func FuzzSplitKey(f *testing.F) {
	good := ObjectKey("etcd.backup", 7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, key := range []string{
		good,
		good + "_ns_a_0000000000000001",
		good + "_ns_-_ffffffffffffffff",
		"p_20260329T003005Z_v00000000000000012345_prod_main_0000000000000abc",
		"etcd.backup",
		"etcd.backup_v7_2026-01-01-00:00:00",
		"etcd.backup_v07_2026-01-01-00:00:00",
		"etcd.backup_v7_2026-13-01-00:00:00",
		"_v7_2026-01-01-00:00:00",
		"dir/etcd.backup_v9223372036854775807_2019-05-01-02:00:00",
		"etcd.backup_20260101T000000Z_v7",
		"etcd.backup_20261301T000000Z_v00000000000000000007",
		"etcd.backup_20260101T000000Z_v0000000000000000000x",
		"etcd.backup_20260101T000000Z_v-0000000000000000007",
		"etcd.backup_20260101T000000Z_v99999999999999999999",
		"_20260101T000000Z_v00000000000000000007",
		good + ".tmp",
		good + "_ns_a_000000000000000A",
		good + "_NS_a_0000000000000001",
		good + "_ns__0000000000000001",
		good + "_ns_a_0000000000000001_x",
		good + "_ns_a_0000000000000001_k0123456789abcdef",
		good + "_k0123456789abcdef",
		good + "_ns_a_0000000000000001_k0123456789ABCDEF",
		good + "_ns_a_0000000000000001_k0123456789abcde",
		good + "_ns_a_0000000000000001_k0123456789abcdef_k0123456789abcdef",
	} {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		prefix, info, ok := SplitKey(key)
		if !ok {
			if info != (KeyInfo{}) || prefix != "" {
				t.Fatalf("SplitKey(%q) rejected but returned %q, %+v", key, prefix, info)
			}
			return
		}
		if info.Revision < 0 || info.Time.Location() != time.UTC || info.Time.Nanosecond() != 0 {
			t.Fatalf("SplitKey(%q) = %+v: negative revision or a time that is not whole UTC seconds", key, info)
		}
		again := ObjectKey(prefix, info.Revision, info.Time)
		switch {
		case info.Tagged():
			again = ClusterKeyIn(prefix, info.Identity, info.Kube, info.Revision, info.Time)
		case info.Coreos:
			again = CoreosKey(prefix, info.Revision, info.Time)
		}
		if again != key {
			t.Fatalf("SplitKey(%q) = %q, %+v, which renders as %q", key, prefix, info, again)
		}
		if got, ok := ParseKey(prefix, key); !ok || !sameKeyInfo(got, info) {
			t.Fatalf("ParseKey(%q, %q) = %+v, %t; SplitKey said %+v", prefix, key, got, ok, info)
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
	b = append(append([]byte("a"), b[:min(len(b), 251)]...), 'z')
	return string(b)
}

func sameKeyInfo(a, b KeyInfo) bool {
	return a.Time.Equal(b.Time) && a.Revision == b.Revision && a.Identity == b.Identity && a.Kube == b.Kube && a.Coreos == b.Coreos
}
