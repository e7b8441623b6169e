package etcdbackup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// clusterOf creates EtcdCluster name in ns whose status reports e's cluster ID, as the etcd
// operator records it, and returns that ID.
func clusterOf(t *testing.T, ns, name string, e *snapshottest.Etcd) uint64 {
	t.Helper()
	resp, err := e.Client(t).Status(t.Context(), e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       etcdv1beta2.ClusterSpec{Size: 1, Version: "3.6.16"},
	}
	create(t, c)
	c.Status.ClusterID = fmt.Sprintf("%x", resp.Header.ClusterId)
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return resp.Header.ClusterId
}

// TestPeriodicBackupsOfTwoClustersUnderOnePrefix is reproduction 2 of issue 13: clusters a and b
// (two real etcd processes at the same revision) with coreos periodic backups (etcdEndpoints,
// every 2 s, maxBackups 1) under one prefix. Their objects are named after their cluster, so
// they never share a name even at the same revision, and each one's retention deletes only its
// own older backups: after several rounds the prefix holds exactly each cluster's newest
// backup, the one its status records. (Before, each retention deleted the other's newest
// backup, and at the same revision and second both wrote one object.)
func TestPeriodicBackupsOfTwoClustersUnderOnePrefix(t *testing.T) {
	ns := namespace(t)
	bucket := storagetest.NewS3Bucket(t)
	createSecret(t, ns, "aws", bucket.Secret)
	ids := map[string]snapshot.Identity{}
	for _, name := range []string{"a", "b"} {
		e := snapshottest.StartEtcd(t, "")
		snapshottest.Put(t, e.Client(t), "/k/", 20, 16) // both at revision 21
		ids[name] = snapshot.Identity{Namespace: ns, Cluster: name, ClusterID: clusterOf(t, ns, name, e)}
		b := newBackup(ns, name+"-periodic", []string{e.Endpoint}, bucket, "shared/etcd.backup", "aws")
		b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 1}
		create(t, b)
	}
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, &newBackup(ns, "", nil, bucket, "shared/etcd.backup", "aws").Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Over at least three rounds of each, every recorded newest backup stays in the bucket.
	rounds := map[string]map[string]bool{"a": {}, "b": {}}
	missing := map[string]time.Time{} // keys a status named while they were not in the bucket
	const missingGrace = 10 * time.Second
	status := map[string]*etcdv1beta2.EtcdBackup{}
	testutil.Eventually(t, 60*time.Second, "three rounds of each backup", func() (bool, string) {
		for _, name := range []string{"a", "b"} {
			b := &etcdv1beta2.EtcdBackup{}
			if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name + "-periodic"}, b); err != nil {
				t.Fatal(err)
			}
			if !b.Status.Succeeded {
				continue
			}
			_, _, key, _ := storage.ParseURL(b.Status.Location)
			info, ok := snapshot.ParseKey("shared/etcd.backup", key)
			if !ok || info.Identity != ids[name] || info.Revision != 21 {
				t.Fatalf("%s's backup %s: key says %+v, want %v at revision 21", name, key, info, ids[name])
			}
			// The newest backup must be there. Between its own retention deleting the previous
			// object and the status patch of the same pass, the status is one round behind (on
			// a loaded machine for a second or more): fail only when the status keeps naming a
			// missing object for missingGrace.
			if _, err := store.Stat(t.Context(), key); err != nil {
				if since, ok := missing[key]; !ok {
					missing[key] = time.Now()
				} else if time.Since(since) > missingGrace {
					t.Fatalf("%s's status has named the missing backup %s for %s: %v", name, key, missingGrace, err)
				}
				continue
			}
			rounds[name][key] = true
			status[name] = b
		}
		return len(rounds["a"]) >= 3 && len(rounds["b"]) >= 3, fmt.Sprintf("rounds a=%d b=%d", len(rounds["a"]), len(rounds["b"]))
	})
	if status["a"].Status.Location == status["b"].Status.Location {
		t.Fatalf("both clusters wrote %s", status["a"].Status.Location)
	}
	// Retention settles on exactly one object per cluster: each one's newest.
	testutil.Eventually(t, 20*time.Second, "one object per cluster under the prefix", func() (bool, string) {
		infos, err := store.List(t.Context(), "shared/")
		if err != nil {
			return false, err.Error()
		}
		var keys []string
		perCluster := map[string]int{}
		for _, o := range infos {
			keys = append(keys, o.Key)
			info, _ := snapshot.ParseKey("shared/etcd.backup", o.Key)
			perCluster[info.Cluster]++
		}
		return len(infos) == 2 && perCluster["a"] == 1 && perCluster["b"] == 1, strings.Join(keys, " ")
	})
}

// TestPeriodicBackupUnknownCluster: an etcdEndpoints backup of an etcd no EtcdCluster reports
// is tagged with "-" and its cluster ID, and its retention leaves a named cluster's backups
// under the same prefix alone.
func TestPeriodicBackupUnknownCluster(t *testing.T) {
	ns := namespace(t)
	bucket := storagetest.NewS3Bucket(t)
	createSecret(t, ns, "aws", bucket.Secret)
	named, bare := snapshottest.StartEtcd(t, ""), snapshottest.StartEtcd(t, "")
	clusterOf(t, ns, "named", named)

	once := newBackup(ns, "named-once", []string{named.Endpoint}, bucket, "p/etcd.backup", "aws")
	once.Spec.PathType = etcdv1beta2.BackupPathPrefix
	create(t, once)
	once = waitPhase(t, ns, "named-once", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)

	b := newBackup(ns, "bare", []string{bare.Endpoint}, bucket, "p/etcd.backup", "aws")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 1, MaxBackups: 1}
	create(t, b)
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, &b.Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	seen := map[string]bool{}
	testutil.Eventually(t, 60*time.Second, "three rounds of the bare etcd's backup", func() (bool, string) {
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "bare"}, b); err != nil {
			t.Fatal(err)
		}
		if _, _, key, _ := storage.ParseURL(b.Status.Location); b.Status.Succeeded {
			seen[key] = true
		}
		return len(seen) >= 3, fmt.Sprint(len(seen))
	})
	_, _, namedKey, _ := storage.ParseURL(once.Status.Location)
	if _, err := store.Stat(t.Context(), namedKey); err != nil {
		t.Fatalf("the named cluster's backup %s was deleted by another cluster's retention: %v", namedKey, err)
	}
	for key := range seen {
		info, ok := snapshot.ParseKey("p/etcd.backup", key)
		if !ok || info.Namespace != ns || info.Cluster != snapshot.UnknownCluster || info.ClusterID == 0 {
			t.Fatalf("bare etcd's key %s: %+v, want namespace %s, cluster -, its cluster ID", key, info, ns)
		}
	}
	if info, _ := snapshot.ParseKey("p/etcd.backup", namedKey); info.Cluster != "named" {
		t.Fatalf("named cluster's key %s: %+v", namedKey, info)
	}
}
