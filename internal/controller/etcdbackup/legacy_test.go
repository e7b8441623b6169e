package etcdbackup

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// putObjects writes small objects under keys into the store a backup spec names.
func putObjects(t *testing.T, ns string, spec *etcdv1beta2.BackupSpec, keys ...string) *storage.Store {
	t.Helper()
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for _, k := range keys {
		if err := store.Put(t.Context(), k, strings.NewReader("older backup")); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// TestLegacyBackupsRetained: a prefix one cluster used before keys named their cluster is
// cleaned up as before: its legacy backups count as the cluster's and age out with maxBackups.
func TestLegacyBackupsRetained(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	ns := namespace(t)
	createSecret(t, ns, "aws", bucket.Secret)
	b := newBackup(ns, "periodic", []string{e.Endpoint}, bucket, "old/etcd.backup", "aws")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600, MaxBackups: 1}
	past := time.Now().Add(-48 * time.Hour)
	store := putObjects(t, ns, &b.Spec, snapshot.ObjectKey("old/etcd.backup", 5, past), snapshot.ObjectKey("old/etcd.backup", 9, past.Add(time.Hour)))
	create(t, b)
	b = waitPhase(t, ns, "periodic", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
	_, _, newest, _ := storage.ParseURL(b.Status.Location)
	testutil.Eventually(t, 10*time.Second, "legacy backups aged out", func() (bool, string) {
		keys := listKeys(t, store, "old/")
		return slices.Equal(keys, []string{newest}), fmt.Sprint(keys)
	})
}

// TestLegacyBackupsAmbiguous: once another cluster's tagged backups share the prefix, legacy
// backups may be anyone's: retention leaves them alone and says so in one Warning event, not one
// per run.
func TestLegacyBackupsAmbiguous(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	ns := namespace(t)
	createSecret(t, ns, "aws", bucket.Secret)
	b := newBackup(ns, "periodic", []string{e.Endpoint}, bucket, "mixed/etcd.backup", "aws")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 1, MaxBackups: 1}
	past := time.Now().Add(-48 * time.Hour)
	other := snapshot.Identity{Namespace: ns, Cluster: "other", ClusterID: 0x0123456789abcdef}
	legacy := []string{snapshot.ObjectKey("mixed/etcd.backup", 5, past), snapshot.ObjectKey("mixed/etcd.backup", 9, past.Add(time.Hour))}
	othersKey := snapshot.ClusterKey("mixed/etcd.backup", other, 3, past)
	store := putObjects(t, ns, &b.Spec, append(slices.Clone(legacy), othersKey)...)
	create(t, b)

	seen := waitRounds(t, b, 3)
	keys := listKeys(t, store, "mixed/")
	for _, k := range append(legacy, othersKey) {
		if !slices.Contains(keys, k) {
			t.Fatalf("%s was deleted; left %v", k, keys)
		}
	}
	checkLegacyKeptOnce(t, ns, "periodic", ns+"/other", len(seen))
}

// waitRounds waits for n distinct successful backups of periodic EtcdBackup b and returns their
// locations.
func waitRounds(t *testing.T, b *etcdv1beta2.EtcdBackup, n int) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d rounds", n), func() (bool, string) {
		got := &etcdv1beta2.EtcdBackup{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
			return false, err.Error()
		}
		if got.Status.Succeeded {
			seen[got.Status.Location] = true
		}
		return len(seen) >= n, fmt.Sprint(len(seen))
	})
	return seen
}

// checkLegacyKeptOnce checks that EtcdBackup name got exactly one LegacyBackupsKept Warning
// event over its runs, naming naming.
func checkLegacyKeptOnce(t *testing.T, ns, name, naming string, runs int) {
	t.Helper()
	var count int32
	events := &corev1.EventList{}
	if err := k8s.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "LegacyBackupsKept" && ev.InvolvedObject.Name == name {
			count += max(ev.Count, 1)
			if !strings.Contains(ev.Message, naming) || ev.Type != corev1.EventTypeWarning {
				t.Fatalf("event %s %q does not name %s", ev.Type, ev.Message, naming)
			}
		}
	}
	if count != 1 {
		t.Fatalf("%d LegacyBackupsKept events over %d runs, want 1", count, runs)
	}
}

func listKeys(t *testing.T, store *storage.Store, prefix string) []string {
	t.Helper()
	infos, err := store.List(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range infos {
		keys = append(keys, o.Key)
	}
	return keys
}
