package kubectletcd

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubeid"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// TestBackups lists a real MinIO bucket through the schedule's storage block and credentials
// Secret: backups of this cluster under two cluster IDs (before and after a re-creation) are
// marked *, those of another cluster and of the same name in another namespace !, a legacy key
// and a foreign object ?; -o json and -o yaml parse as a backupList with the same marks,
// revisions and sizes; another -o value is a usage error; a block without a Secret is refused
// unless --ambient-credentials.
func TestBackups(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t)
	ns := testutil.Namespace(t, k8s, "backups")
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, Data: bucket.Secret}); err != nil {
		t.Fatal(err)
	}
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{ClusterID: "00000000000000bb"})
	s := newSchedule(t, ns, "nightly", "main", bucket.Type, bucket.Source("etcd/backup", "aws"), etcdv1beta2.BackupScheduleStatus{})

	loc, err := storage.FromSpec(&s.Spec.BackupTemplate.Spec)
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(t.Context(), loc, storage.APISecrets{Reader: k8s, Namespace: ns}, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	const prefix = "etcd/backup"
	// This Kubernetes cluster's identity, as the operators read it (issue 30 item 5).
	kubeSystem := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: kubeid.Namespace}, kubeSystem); err != nil {
		t.Fatal(err)
	}
	here := kubeid.Of(string(kubeSystem.UID))
	keys := map[string]string{
		"this Kubernetes cluster":  snapshot.ClusterKeyIn(prefix, snapshot.Identity{Namespace: ns, Cluster: "main", ClusterID: 0xbb}, here, 250, now.Add(-90*time.Minute)),
		"other Kubernetes cluster": snapshot.ClusterKeyIn(prefix, snapshot.Identity{Namespace: ns, Cluster: "main", ClusterID: 0xdd}, "00000000000000ea", 260, now.Add(-80*time.Minute)),
		"before re-creation":       snapshot.ClusterKey(prefix, snapshot.Identity{Namespace: ns, Cluster: "main", ClusterID: 0xaa}, 100, now.Add(-48*time.Hour)),
		"this cluster":             snapshot.ClusterKey(prefix, snapshot.Identity{Namespace: ns, Cluster: "main", ClusterID: 0xbb}, 200, now.Add(-2*time.Hour)),
		"other cluster":            snapshot.ClusterKey(prefix, snapshot.Identity{Namespace: ns, Cluster: "other", ClusterID: 0xcc}, 300, now.Add(-time.Hour)),
		"other namespace":          snapshot.ClusterKey(prefix, snapshot.Identity{Namespace: "staging", Cluster: "main", ClusterID: 0xbb}, 400, now.Add(-time.Hour)),
		"legacy":                   snapshot.ObjectKey(prefix, 50, now.Add(-72*time.Hour)),
		"coreos":                   snapshot.CoreosKey(prefix, 40, now.Add(-96*time.Hour)),
		"foreign":                  prefix + "/README.txt",
	}
	for what, key := range keys {
		if err := store.Put(t.Context(), key, strings.NewReader(strings.Repeat("x", 2048))); err != nil {
			t.Fatalf("putting %s: %v", what, err)
		}
	}

	r := run(t.Context(), now, ns, "backups", "main")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	t.Log("\n" + r.out)
	mustContain(t, r.out, "S3://"+bucket.Name+"/etcd/backup (storage of etcdbackupschedule/nightly), 9 objects", "* = a backup of "+ns+"/main (3)")
	for what, want := range map[string]string{
		"before re-creation":       "* 2026-11-25T12:00:00Z 2d 100 2.0 KiB " + ns + "/main (cluster ID 00000000000000aa)",
		"this cluster":             "* 2026-11-27T10:00:00Z 120m 200 2.0 KiB " + ns + "/main (cluster ID 00000000000000bb)",
		"this Kubernetes cluster":  "* 2026-11-27T10:30:00Z 90m 250 2.0 KiB " + ns + "/main (cluster ID 00000000000000bb) in Kubernetes cluster " + here,
		"other Kubernetes cluster": "! 2026-11-27T10:40:00Z 80m 260 2.0 KiB OTHER: " + ns + "/main (cluster ID 00000000000000dd) in Kubernetes cluster 00000000000000ea",
		"other cluster":            "! 2026-11-27T11:00:00Z 60m 300 2.0 KiB OTHER: " + ns + "/other",
		"other namespace":          "! 2026-11-27T11:00:00Z 60m 400 2.0 KiB OTHER: staging/main",
		"legacy":                   "? 2026-11-24T12:00:00Z 3d 50 2.0 KiB legacy (no cluster identity)",
		"coreos":                   "? 2026-11-23T12:00:00Z 4d 40 2.0 KiB coreos periodic backup (no cluster identity)",
		"foreign":                  "? - - - 2.0 KiB not a backup key",
	} {
		if l := squash(line(r.out, keys[what])); !strings.Contains(l, want) {
			t.Errorf("%s: row %q, want %q", what, l, want)
		}
	}

	// -o json and -o yaml: the same rows as one list object on stdout, the heading on stderr.
	for _, format := range []string{"json", "yaml"} {
		r := run(t.Context(), now, ns, "backups", "main", "-o", format)
		if r.code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, r.code, r.err)
		}
		if !strings.Contains(r.err, "(storage of etcdbackupschedule/nightly), 9 objects") {
			t.Errorf("-o %s: stderr %q, want the heading", format, r.err)
		}
		t.Log("\n" + r.out)
		var l backupList
		if err := decode(format, r.out, &l); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, r.out)
		}
		if l.Location != "S3://"+bucket.Name+"/etcd/backup" || l.StorageOf != "etcdbackupschedule/nightly" || l.Namespace != ns || l.Cluster != "main" || len(l.Backups) != len(keys) {
			t.Fatalf("-o %s: %s of %s for %s/%s, %d objects; want %d:\n%s", format, l.Location, l.StorageOf, l.Namespace, l.Cluster, len(l.Backups), len(keys), r.out)
		}
		byKey := map[string]backupObject{}
		for _, b := range l.Backups {
			byKey[b.Key] = b
		}
		for what, want := range map[string]struct {
			match     string
			revision  int64
			taken     time.Time
			owner     string
			clusterID string
		}{
			"before re-creation":       {matchThis, 100, now.Add(-48 * time.Hour), "main", "00000000000000aa"},
			"this cluster":             {matchThis, 200, now.Add(-2 * time.Hour), "main", "00000000000000bb"},
			"this Kubernetes cluster":  {matchThis, 250, now.Add(-90 * time.Minute), "main", "00000000000000bb"},
			"other Kubernetes cluster": {matchOther, 260, now.Add(-80 * time.Minute), "main", "00000000000000dd"},
			"other cluster":            {matchOther, 300, now.Add(-time.Hour), "other", "00000000000000cc"},
			"other namespace":          {matchOther, 400, now.Add(-time.Hour), "main", "00000000000000bb"},
			"legacy":                   {matchLegacy, 50, now.Add(-72 * time.Hour), "", ""},
			"coreos":                   {matchLegacy, 40, now.Add(-96 * time.Hour), "", ""},
			"foreign":                  {matchNotBackup, 0, time.Time{}, "", ""},
		} {
			b, ok := byKey[keys[what]]
			switch {
			case !ok:
				t.Errorf("-o %s: %s (%s) missing", format, what, keys[what])
				continue
			case b.Coreos != (what == "coreos"):
				t.Errorf("-o %s: %s coreos = %t", format, what, b.Coreos)
			case b.Match != want.match || b.Revision != want.revision || b.Size != 2048:
				t.Errorf("-o %s: %s = %+v, want %s, revision %d, 2048 bytes", format, what, b, want.match, want.revision)
			case want.taken.IsZero() != (b.Time == nil) || (b.Time != nil && !b.Time.Time.Equal(want.taken)):
				t.Errorf("-o %s: %s taken %v, want %v", format, what, b.Time, want.taken)
			case want.owner == "" && b.Owner != nil:
				t.Errorf("-o %s: %s owner %+v, want none", format, what, b.Owner)
			case want.owner != "" && (b.Owner == nil || b.Owner.Cluster != want.owner || b.Owner.ClusterID != want.clusterID):
				t.Errorf("-o %s: %s owner %+v, want cluster %s (ID %s)", format, what, b.Owner, want.owner, want.clusterID)
			}
		}
	}
	if r := run(t.Context(), now, ns, "backups", "main", "-o", "table"); r.code != 2 || !strings.Contains(r.err, `backups: -o "table": want json or yaml`) || r.out != "" {
		t.Errorf("backups -o table: exit %d, stdout %q, stderr %q; want 2 and the usage error", r.code, r.out, r.err)
	}

	// A storage block without a credentials Secret: no ambient credentials unless asked for.
	newSchedule(t, ns, "ambient", "main", bucket.Type, bucket.Source("etcd/backup", ""), etcdv1beta2.BackupScheduleStatus{})
	r = run(t.Context(), now, ns, "backups", "main", "--schedule", "ambient")
	if r.code != 1 || !strings.Contains(r.err, "names no credentials Secret") {
		t.Errorf("without a Secret: exit %d, stderr %q; want the ambient credentials refusal", r.code, r.err)
	}
}
