package etcdbackup

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// MinIO stands in for Alibaba OSS in these tests (storagetest.NewOSSBucket): the oss block and
// the ossSecret are the coreos ones, the endpoint is MinIO's.

// TestOSSBackupAndRestoreFetch: a one-shot backup with storageType OSS completes like an S3 one
// (OSS:// location, the stored object's sha256 and size in its status), and the restore seed
// agent, given the location as the restore operator hands it over (encoded, its Secret mounted
// as the seed pod mounts it), fetches, verifies and restores that object.
func TestOSSBackupAndRestoreFetch(t *testing.T) {
	bucket := storagetest.NewOSSBucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 200, 1024)
	ns := namespace(t)
	createSecret(t, ns, "my-oss-credentials", bucket.Secret)
	create(t, newBackup(ns, "oss-once", []string{e.Endpoint}, bucket, "etcd.backup", "my-oss-credentials"))
	b := waitPhase(t, ns, "oss-once", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
	if want := "OSS://" + bucket.Name + "/etcd.backup"; b.Status.Location != want {
		t.Fatalf("location %q, want %q", b.Status.Location, want)
	}
	sum, size := objectSHA256(t, b)
	if sum != b.Status.SHA256 || size != b.Status.Size || size == 0 || b.Status.EtcdRevision < 200 {
		t.Fatalf("object sha256/size %s/%d, status %+v", sum, size, b.Status)
	}

	base, err := storage.FromSpec(&b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	at, err := base.At(b.Status.Location)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := storage.Decode(at.Encode())
	if err != nil {
		t.Fatal(err)
	}
	secretsDir := t.TempDir()
	_, mounts := storage.PodSecrets(loc, secretsDir)
	if len(mounts) != 1 || mounts[0].MountPath != filepath.Join(secretsDir, "my-oss-credentials") {
		t.Fatalf("seed pod mounts %+v, want the ossSecret only", mounts)
	}
	for k, v := range bucket.Secret {
		if err := os.MkdirAll(mounts[0].MountPath, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mounts[0].MountPath, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res := restoreseed.Restore(t.Context(), &restoreseed.Options{
		Location: loc, SecretsDir: secretsDir,
		Expect:  restoreseed.Expect{Size: b.Status.Size, SHA256: b.Status.SHA256},
		DataDir: filepath.Join(t.TempDir(), "data"), Name: "c-0",
		InitialCluster: "c-0=http://c-0.c.ns.svc:2380", ClusterToken: "uid", PeerURL: "http://c-0.c.ns.svc:2380",
		Etcdutl: snapshottest.Bin(t, "etcdutl"), Timeout: time.Minute,
	})
	if res.Outcome != restoreseed.OutcomeRestored || res.SHA256 != b.Status.SHA256 || res.Revision < b.Status.EtcdRevision {
		t.Fatalf("seed restore from OSS: %+v, backup status %+v", res, b.Status)
	}
}

// TestOSSPeriodicRetention: the coreos periodic form on OSS keys each backup by time and
// revision under the path and keeps maxBackups of them, as for S3.
func TestOSSPeriodicRetention(t *testing.T) {
	bucket := storagetest.NewOSSBucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/a/", 10, 16)
	ns := namespace(t)
	createSecret(t, ns, "oss", bucket.Secret)
	b := newBackup(ns, "oss-periodic", []string{e.Endpoint}, bucket, "cluster/etcd.backup", "oss")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 1, MaxBackups: 2}
	create(t, b)

	// Three backups at three revisions: the first must go.
	var prev int64
	for i := range 3 {
		testutil.Eventually(t, 30*time.Second, "a periodic OSS backup newer than the last", func() (bool, string) {
			if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "oss-periodic"}, b); err != nil {
				return false, err.Error()
			}
			return b.Status.Succeeded && b.Status.EtcdRevision > prev, b.Status.Reason
		})
		prev = b.Status.EtcdRevision
		snapshottest.Put(t, cli, fmt.Sprintf("/w%d/", i), 3, 16)
	}
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, &b.Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testutil.Eventually(t, 10*time.Second, "retention to keep the 2 newest OSS backups", func() (bool, string) {
		infos, err := store.List(t.Context(), "cluster/")
		if err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "oss-periodic"}, b); err != nil {
			return false, err.Error()
		}
		kept := retention.Parse("cluster/etcd.backup", infos)
		_, _, newestKey, _ := storage.ParseURL(b.Status.Location)
		return len(kept) == 2 && len(infos) == 2 && kept[0].Key == newestKey && kept[0].Revision >= prev, fmt.Sprint(infos, " status ", b.Status.Location)
	})
}

// TestOSSCredentialFailures: an ossSecret that is missing, has the wrong keys (an awsSecret) or
// a wrong AccessKey fails the backup once with the reason an S3 backup would give.
func TestOSSCredentialFailures(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	cases := []struct {
		name   string
		secret map[string][]byte // nil: no Secret
		reason string
	}{
		{"missing ossSecret", nil, etcdv1beta2.ReasonSecretNotFound},
		{"awsSecret keys", map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")}, etcdv1beta2.ReasonInvalidCredentials},
		{"wrong AccessKey", map[string][]byte{etcdv1beta2.OSSSecretAccessKeyID: []byte("wrong"), etcdv1beta2.OSSSecretAccessKeySecret: []byte("wrong-secret")}, etcdv1beta2.ReasonInvalidCredentials},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			bucket := storagetest.NewOSSBucket(t)
			if tc.secret != nil {
				createSecret(t, ns, "oss", tc.secret)
			}
			create(t, newBackup(ns, "fail", []string{e.Endpoint}, bucket, "etcd.backup", "oss"))
			b := waitPhase(t, ns, "fail", etcdv1beta2.BackupPhaseFailed, 60*time.Second)
			if got := failedReason(t, b); got != tc.reason || b.Status.Attempts != 1 || b.Status.Succeeded {
				t.Fatalf("reason %s attempts %d, want %s after 1; status %+v", got, b.Status.Attempts, tc.reason, b.Status)
			}
		})
	}
}
