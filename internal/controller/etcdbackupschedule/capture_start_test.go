package etcdbackupschedule

import (
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// TestPickStart: a capture resumes after the last revision captured while etcd has what follows
// it; otherwise it continues the newest full backup if etcd has what follows that; otherwise it
// needs a new full backup.
func TestPickStart(t *testing.T) {
	id := snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: 1}
	for _, tc := range []struct {
		name                  string
		last, base, compacted int64
		want                  int64 // 0: errNoBase
	}{
		{"nothing yet", 0, 0, 0, 0},
		{"first capture after the first backup", 0, 100, 0, 101},
		{"resume after a restart", 250, 100, 0, 251},
		{"resume across a newer backup: no gap", 250, 300, 0, 251},
		{"resume when etcd kept the next revision", 250, 100, 250, 251},
		{"the last captured is compacted, a newer backup is not", 250, 300, 280, 301},
		{"the newest backup's next revision is exactly kept", 250, 300, 300, 301},
		{"both compacted", 250, 300, 400, 0},
		{"backup older than the capture, capture compacted", 250, 200, 260, 0},
		{"no capture, backup compacted", 0, 100, 150, 0},
	} {
		got, err := pickStart(tc.last, tc.base, tc.compacted, id)
		if tc.want == 0 {
			if !errors.Is(err, errNoBase) {
				t.Errorf("%s: pickStart = %+v, %v; want errNoBase", tc.name, got, err)
			}
			continue
		}
		if err != nil || got.revision != tc.want {
			t.Errorf("%s: pickStart = %+v, %v; want revision %d", tc.name, got, err, tc.want)
		}
	}
}

// TestCompactionFloor: a compaction met by the capture of one cluster does not hold back the
// capture of another (a cluster deleted and re-created under the same name counts from
// revision 1 again, and would otherwise wait for a backup past the old compaction forever).
func TestCompactionFloor(t *testing.T) {
	old := snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: 1}
	recreated := snapshot.Identity{Namespace: "ns", Cluster: "main", ClusterID: 2}
	c := compaction{id: old, revision: 5000}
	if got := c.floor(old); got != 5000 {
		t.Errorf("floor of the compacted cluster = %d, want 5000", got)
	}
	if got := c.floor(recreated); got != 0 {
		t.Errorf("floor of another cluster = %d, want 0", got)
	}
	// With the floor of another cluster, the re-created cluster's first backup is continued.
	if p, err := pickStart(0, 40, c.floor(recreated), recreated); err != nil || p.revision != 41 {
		t.Errorf("pickStart for the re-created cluster = %+v, %v; want revision 41", p, err)
	}
}
