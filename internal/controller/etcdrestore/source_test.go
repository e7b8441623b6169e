package etcdrestore

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

func TestKeyInfo(t *testing.T) {
	at := time.Date(2026, 11, 22, 2, 51, 0, 0, time.UTC)
	id := snapshot.Identity{Namespace: "demo", Cluster: "demo", ClusterID: 0xcafe}
	for _, key := range []string{snapshot.ObjectKey("demo/etcd.backup", 634, at), snapshot.ClusterKey("demo/etcd.backup", id, 634, at)} {
		info, ok := keyInfo(key)
		if !ok || !info.Time.Equal(at) || info.Revision != 634 {
			t.Fatalf("keyInfo(%q) = %+v, %t", key, info, ok)
		}
	}
	for _, key := range []string{"etcd.backup", "db/etcd.backup", "x_20261122T025100Z_v12"} {
		if _, ok := keyInfo(key); ok {
			t.Errorf("keyInfo(%q) parsed a key snapshot.ObjectKey did not write", key)
		}
	}
}

// TestNewestOf: backupSelection Newest restores only a backup of the cluster the restore names
// (reproduction 2: under a prefix shared by clusters a and b, b's newer backup was restored into
// a), falls back to legacy keys only when no other cluster's backups share the prefix, and says
// whose backups it found when it finds none of the cluster's.
func TestNewestOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Hour)
	a := snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa}
	aRestored := snapshot.Identity{Namespace: "ns", Cluster: "a", ClusterID: 0xa2}
	b := snapshot.Identity{Namespace: "ns", Cluster: "b", ClusterID: 0xb}
	aElsewhere := snapshot.Identity{Namespace: "other", Cluster: "a", ClusterID: 0xa}
	key := func(id snapshot.Identity, h int) string {
		return snapshot.ClusterKey("shared/etcd.backup", id, int64(h), t0.Add(time.Duration(h)*time.Hour))
	}
	legacy := func(h int) string {
		return snapshot.ObjectKey("shared/etcd.backup", int64(h), t0.Add(time.Duration(h)*time.Hour))
	}
	list := func(keys ...string) []backend.ObjectInfo {
		var out []backend.ObjectInfo
		for _, k := range keys {
			info, _ := keyInfo(k)
			out = append(out, backend.ObjectInfo{Key: k, ModTime: info.Time})
		}
		backend.SortObjects(out)
		return out
	}
	cases := []struct {
		name     string
		template string
		objs     []backend.ObjectInfo
		want     string
		mention  []string // in the failure message
	}{
		{name: "a's, not b's newer one", objs: list(key(a, 1), key(b, 2)), want: key(a, 1)},
		{name: "a's after a restore (new cluster ID)", objs: list(key(a, 1), key(aRestored, 3), key(b, 4)), want: key(aRestored, 3)},
		{name: "not a's of another namespace", objs: list(key(aElsewhere, 5), key(a, 1)), want: key(a, 1)},
		{name: "legacy under a prefix of one cluster", objs: list(legacy(1), legacy(2), "shared/etcd.backup"), want: legacy(2)},
		{name: "a's before a newer legacy one", objs: list(key(a, 1), legacy(2)), want: key(a, 1)},
		{name: "only b's: says so", objs: list(key(b, 1), legacy(2)), mention: []string{"ns/b", "000000000000000b"}},
		{name: "only other namespace", objs: list(key(aElsewhere, 1)), mention: []string{"other/a"}},
		{name: "nothing", objs: list("shared/etcd.backup"), mention: []string{"no backup written by this project"}},
		{name: "drill: the template's", template: "a", objs: list(key(a, 1), key(b, 2)), want: key(a, 1)},
		{name: "future key: by ModTime", objs: []backend.ObjectInfo{
			{Key: snapshot.ClusterKey("shared/etcd.backup", a, 99, now.Add(30*24*time.Hour)), ModTime: t0},
			{Key: key(a, 5), ModTime: t0.Add(5 * time.Hour)},
		}, want: key(a, 5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := &etcdv1beta2.EtcdRestore{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
				Spec:       etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "a"}, BackupSelection: etcdv1beta2.BackupSelectionNewest},
			}
			if tc.template != "" {
				rs.Spec.EtcdCluster.Name = "scratch"
				rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: tc.template}
			}
			got, err := newestOf(rs, "shared/etcd.backup", "S3://bucket/shared/etcd.backup", "", tc.objs, now)
			if tc.want != "" {
				if err != nil || got.Key != tc.want {
					t.Fatalf("newestOf = %q, %v; want %q", got.Key, err, tc.want)
				}
				return
			}
			re, ok := errors.AsType[*reason.Error](err)
			if !ok || re.Reason != etcdv1beta2.ReasonNoSuccessfulBackup {
				t.Fatalf("newestOf = %q, %v; want a NoSuccessfulBackup failure", got.Key, err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("message %q does not mention %q", err, m)
				}
			}
		})
	}
}

// TestPinnedByThePreviousRelease: a restore the previous release verified pinned its backup in
// an annotation; this release finishes it from there, and prefers status.source when both exist.
func TestPinnedByThePreviousRelease(t *testing.T) {
	loc := storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "old/etcd.backup", Secret: "aws"}
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationBackupSource: loc.Encode()}}}
	got, err := pinned(rs)
	if err != nil || got.loc.Bucket != "b" || got.loc.Key != "old/etcd.backup" || got.loc.Secret != "aws" {
		t.Fatalf("legacy pin: %+v %v", got, err)
	}
	now := storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "new/etcd.backup", Secret: "aws"}
	rs.Status.Source = &etcdv1beta2.RestoreSource{StorageType: now.Type, BackupSource: now.Block()}
	if got, err := pinned(rs); err != nil || got.loc.Key != "new/etcd.backup" {
		t.Fatalf("status.source: %+v %v", got, err)
	}
	if _, err := pinned(&etcdv1beta2.EtcdRestore{}); reason.Of(err) != etcdv1beta2.ReasonBackupNotFound {
		t.Fatalf("nothing pinned: %v", err)
	}
}
