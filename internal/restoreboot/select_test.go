package restoreboot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// snapshotOf is n bytes of data followed by their sha256, as etcd streams a snapshot.
func snapshotOf(seed byte, n int) []byte {
	data := bytes.Repeat([]byte{seed}, n)
	sum := sha256.Sum256(data)
	return append(data, sum[:]...)
}

func TestSelect(t *testing.T) {
	const prefix = "etcd/backups"
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	prod := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xa1}
	prodAgain := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xb2} // restored: a new ID
	other := snapshot.Identity{Namespace: "team-b", Cluster: "main", ClusterID: 0xc3}
	type object struct {
		key  string
		data []byte
	}
	good := func(id snapshot.Identity, rev int64, hours int) object {
		return object{snapshot.ClusterKey(prefix, id, rev, t0.Add(time.Duration(hours)*time.Hour)), snapshotOf('x', 1000+int(rev))}
	}
	corrupt := func(id snapshot.Identity, rev int64, hours int) object {
		o := good(id, rev, hours)
		o.data[3] ^= 0xff
		return o
	}
	legacy := object{snapshot.ObjectKey(prefix, 7, t0.Add(9*time.Hour)), snapshotOf(7, 700)}
	// The same namespace and name in three Kubernetes clusters (issue 30 item 5): here, east
	// and west, each with its own cluster ID.
	const here, east, west = "00000000000000aa", "00000000000000ea", "00000000000000eb"
	in := func(kube string, id snapshot.Identity, rev int64, hours int) object {
		return object{snapshot.ClusterKeyIn(prefix, id, kube, rev, t0.Add(time.Duration(hours)*time.Hour)), snapshotOf('k', 1000+int(rev))}
	}
	prodEast := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xe1}
	prodWest := snapshot.Identity{Namespace: "prod", Cluster: "main", ClusterID: 0xe2}
	mainAnywhere := snapshot.Identity{Namespace: "prod", Cluster: "main"}
	for _, tc := range []struct {
		name     string
		objs     []object
		want     snapshot.Identity
		kube     string
		at       *etcdv1beta2.PointInTime
		chosen   string // key; "" when none is
		skipped  int
		why      string
		inReason string
	}{
		{name: "the newest backup of the cluster, not another cluster's newer one",
			objs: []object{good(prod, 10, 1), good(prod, 20, 2), good(other, 30, 3)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			chosen: good(prod, 20, 2).key},
		{name: "any incarnation of the cluster by default",
			objs: []object{good(prod, 10, 1), good(prodAgain, 5, 2)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			chosen: good(prodAgain, 5, 2).key},
		{name: "only the named cluster ID",
			objs: []object{good(prod, 10, 1), good(prodAgain, 5, 2)}, want: prod,
			chosen: good(prod, 10, 1).key},
		{name: "a newer backup that does not verify is skipped",
			objs: []object{good(prod, 10, 1), corrupt(prod, 20, 2)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			chosen: good(prod, 10, 1).key, skipped: 1},
		{name: "only corrupt backups: nothing is chosen",
			objs: []object{corrupt(prod, 10, 1), corrupt(prod, 20, 2)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			why: etcdv1beta2.ReasonBackupCorrupt, inReason: "none of the 2 backups"},
		{name: "only other clusters' backups: named, none chosen",
			objs: []object{good(other, 30, 3), legacy}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			why: etcdv1beta2.ReasonNoSuccessfulBackup, inReason: "team-b/main"},
		{name: "a legacy backup when no cluster's backup shares the prefix",
			objs: []object{legacy}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			chosen: legacy.key},
		{name: "at a revision: the newest backup at or below it",
			objs: []object{good(prod, 10, 1), good(prod, 20, 2), good(prod, 30, 3)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			at: &etcdv1beta2.PointInTime{Revision: 29}, chosen: good(prod, 20, 2).key},
		{name: "at a time: the newest backup whole seconds before it",
			objs: []object{good(prod, 10, 1), good(prod, 20, 2), good(prod, 30, 3)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			at: &etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t0.Add(3*time.Hour - time.Second)}}, chosen: good(prod, 20, 2).key},
		{name: "at a time in the second a backup was taken: not that backup",
			objs: []object{good(prod, 10, 1), good(prod, 20, 2)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			at: &etcdv1beta2.PointInTime{Time: &metav1.Time{Time: t0.Add(2 * time.Hour)}}, chosen: good(prod, 10, 1).key},
		{name: "every backup after the point",
			objs: []object{good(prod, 10, 1)}, want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			at:  &etcdv1beta2.PointInTime{Revision: 9},
			why: etcdv1beta2.ReasonNoSuccessfulBackup, inReason: "at or before the point in time revision 9 (1 after it)"},
		{name: "this Kubernetes cluster's backup, not another's newer one of the same name",
			objs: []object{in(here, prod, 10, 1), in(east, prodEast, 40, 5)}, want: mainAnywhere, kube: here,
			chosen: in(here, prod, 10, 1).key},
		{name: "this Kubernetes cluster's backup over an older one without a Kubernetes identity, while another's shares the prefix",
			objs: []object{good(prod, 30, 3), in(here, prod, 10, 1), in(east, prodEast, 40, 5)}, want: mainAnywhere, kube: here,
			chosen: in(here, prod, 10, 1).key},
		{name: "a newer backup without a Kubernetes identity counts as this one's while no other Kubernetes cluster's is there",
			objs: []object{good(prod, 30, 3), in(here, prod, 10, 1)}, want: mainAnywhere, kube: here,
			chosen: good(prod, 30, 3).key},
		{name: "a rebuilt Kubernetes cluster restores the one other Kubernetes cluster's newest backup",
			objs: []object{in(east, prodEast, 10, 1), in(east, prodEast, 20, 2), good(prod, 5, 0)}, want: mainAnywhere, kube: here,
			chosen: in(east, prodEast, 20, 2).key},
		{name: "two other Kubernetes clusters wrote the name's backups: none chosen, the cluster IDs named",
			objs: []object{in(east, prodEast, 10, 1), in(west, prodWest, 20, 2)}, want: mainAnywhere, kube: here,
			why: etcdv1beta2.ReasonNoSuccessfulBackup, inReason: "cluster ID 00000000000000e2 in Kubernetes cluster " + west},
		{name: "two other Kubernetes clusters: the cluster ID chooses",
			objs: []object{in(east, prodEast, 10, 1), in(west, prodWest, 20, 2)}, want: prodEast, kube: here,
			chosen: in(east, prodEast, 10, 1).key},
		{name: "an empty prefix",
			want: snapshot.Identity{Namespace: "prod", Cluster: "main"},
			why:  etcdv1beta2.ReasonNoSuccessfulBackup, inReason: "no backup written by this project"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := memory.New()
			sums := map[string]string{}
			for _, o := range tc.objs {
				if err := b.Put(ctx, o.key, bytes.NewReader(o.data)); err != nil {
					t.Fatal(err)
				}
				s := sha256.Sum256(o.data)
				sums[o.key] = hex.EncodeToString(s[:])
			}
			// An object beside the prefix is not under it.
			if err := b.Put(ctx, "etcd/other_"+strings.Repeat("x", 3), bytes.NewReader(snapshotOf(1, 10))); err != nil {
				t.Fatal(err)
			}
			store := &storage.Store{Backend: b, Location: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "bkt", Key: prefix}}
			sel, err := Select(ctx, store, tc.want, tc.kube, t0.Add(24*time.Hour), tc.at)
			if tc.chosen == "" {
				if err == nil {
					t.Fatalf("chose %s, want %s", sel.Location, tc.why)
				}
				if got := reason.Of(err); got != tc.why || !strings.Contains(err.Error(), tc.inReason) {
					t.Fatalf("error %q (reason %s), want reason %s mentioning %q", err, got, tc.why, tc.inReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "S3://bkt/" + tc.chosen; sel.Location != want {
				t.Fatalf("chose %s, want %s", sel.Location, want)
			}
			if sel.SHA256 != sums[tc.chosen] || sel.Size != int64(len(mustGet(t, b, tc.chosen))) {
				t.Fatalf("recorded size %d sha256 %s, the object has %d bytes and sha256 %s", sel.Size, sel.SHA256, len(mustGet(t, b, tc.chosen)), sums[tc.chosen])
			}
			if len(sel.Skipped) != tc.skipped {
				t.Fatalf("skipped %v, want %d", sel.Skipped, tc.skipped)
			}
		})
	}
}

func mustGet(t *testing.T, b *memory.Backend, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
