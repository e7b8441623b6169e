package etcdbackup

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestOneShotBackupNeverOverwrites: a one-shot backup to an exact path that already holds an
// object (a file the user put there, or another EtcdBackup's backup at a re-used path) fails
// with ObjectExists and leaves the object as it was. (Before, it silently replaced it.)
func TestOneShotBackupNeverOverwrites(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 50, 64)
	ns := namespace(t)
	createSecret(t, ns, "creds", bucket.Secret)

	first := newBackup(ns, "first", []string{e.Endpoint}, bucket, "db/etcd.backup", "creds")
	create(t, first)
	first = waitPhase(t, ns, "first", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
	firstSum, _ := objectSHA256(t, first)

	snapshottest.Put(t, e.Client(t), "/more/", 50, 64)
	create(t, newBackup(ns, "second", []string{e.Endpoint}, bucket, "db/etcd.backup", "creds"))
	second := waitPhase(t, ns, "second", etcdv1beta2.BackupPhaseFailed, 60*time.Second)
	if got := failedReason(t, second); got != etcdv1beta2.ReasonObjectExists || second.Status.Attempts != 1 ||
		!strings.Contains(second.Status.Reason, "pick a new path") {
		t.Fatalf("second backup to the same path: reason %s, attempts %d, message %q", got, second.Status.Attempts, second.Status.Reason)
	}
	if sum, _ := objectSHA256(t, first); sum != firstSum {
		t.Fatalf("the first backup's object was overwritten: sha256 %s, was %s", sum, firstSum)
	}
}

// TestClaimExactPath: the check before an exact-path upload. A free key is claimed (recorded in
// status; the upload follows on the next pass); a key the backup has claimed is its own, so a
// retry after a lost status patch or a lost upload answer overwrites it; any other object fails
// the backup with ObjectExists.
func TestClaimExactPath(t *testing.T) {
	ctx := t.Context()
	store := &storage.Store{Backend: memory.New(), Location: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "bk", Key: "db/etcd.backup"}}
	obj := &etcdv1beta2.EtcdBackup{}
	err := claimExactPath(ctx, obj, store)
	c, ok := errors.AsType[*claimedError](err)
	if !ok || c.location != "S3://bk/db/etcd.backup" {
		t.Fatalf("free key: %v; want claimed", err)
	}
	obj.Status.Location = c.location // what the pass that takes the outcome records
	if err := store.Put(ctx, store.Key, strings.NewReader("our upload, answer lost")); err != nil {
		t.Fatal(err)
	}
	if err := claimExactPath(ctx, obj, store); err != nil {
		t.Fatalf("own claimed key: %v, want the upload to go ahead", err)
	}
	other := &etcdv1beta2.EtcdBackup{}
	err = claimExactPath(ctx, other, store)
	if re, ok := errors.AsType[*reason.Error](err); !ok || re.Reason != etcdv1beta2.ReasonObjectExists || re.Transient {
		t.Fatalf("someone else's object: %v, want a terminal ObjectExists", err)
	}
}
