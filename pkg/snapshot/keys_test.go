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

func TestParseKeyRejectsForeignKeys(t *testing.T) {
	good := ObjectKey("etcd.backup", 7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, key := range []string{
		"etcd.backup",                                         // one-shot object
		"etcd.backup_v7_2026-01-01-00:00:00",                  // coreos format
		"etcd.backup2_20260101T000000Z_v00000000000000000007", // other prefix
		"other_20260101T000000Z_v00000000000000000007",
		"etcd.backup_20260101T000000Z_v7",                    // unpadded
		"etcd.backup_20261301T000000Z_v00000000000000000007", // month 13
		"etcd.backup_20260101T000000Z_v0000000000000000000x",
		"etcd.backup_20260101T000000Z_v-0000000000000000007",
		good + ".tmp",
	} {
		if info, ok := ParseKey("etcd.backup", key); ok {
			t.Errorf("ParseKey(%q) = %+v, want not ours", key, info)
		}
	}
	if _, ok := ParseKey("etcd.backup", good); !ok {
		t.Fatalf("ParseKey(%q) rejected", good)
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
