package etcdbackup

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// tarpit is an object store that accepts connections and never answers.
type tarpit struct {
	addr     string
	accepted atomic.Int32
}

func startTarpit(t *testing.T) *tarpit {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tarpit{addr: l.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tp.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return tp
}

// TestStalledStoreHoldsOnlyItsTenantsShare (#14 item 9): one tenant's five backups go to a
// store that accepts connections and never answers (each hangs for the one-minute deadline of
// its first store call). Another namespace's backup still completes within 30 s, while the
// first tenant's are all Running, and at most two of them (--max-concurrent-backups-per-
// namespace) ever reached the store. Before the worker pool, the stalled backups held both
// reconcile workers and the other namespace waited a minute.
func TestStalledStoreHoldsOnlyItsTenantsShare(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 50, 1024)
	tp := startTarpit(t)
	stalled, other := namespace(t), namespace(t)
	createSecret(t, stalled, "creds", bucket.Secret)
	createSecret(t, other, "creds", bucket.Secret)

	for i := range 5 {
		b := newBackup(stalled, fmt.Sprint("stalled-", i), []string{e.Endpoint}, bucket, fmt.Sprint("stalled/", i), "creds")
		b.Spec.S3.Endpoint = "http://" + tp.addr
		create(t, b)
	}
	for i := range 5 {
		waitPhase(t, stalled, fmt.Sprint("stalled-", i), etcdv1beta2.BackupPhaseRunning, 20*time.Second)
	}
	create(t, newBackup(other, "nightly", []string{e.Endpoint}, bucket, "other/etcd.backup", "creds"))
	done := waitPhase(t, other, "nightly", etcdv1beta2.BackupPhaseCompleted, 30*time.Second)
	if sum, size := objectSHA256(t, done); sum != done.Status.SHA256 || size == 0 {
		t.Fatalf("the other namespace's object: sha256 %s size %d, status %s", sum, size, done.Status.SHA256)
	}

	for i := range 5 {
		b := &etcdv1beta2.EtcdBackup{}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: stalled, Name: fmt.Sprint("stalled-", i)}, b); err != nil {
			t.Fatal(err)
		}
		if b.Status.Phase != etcdv1beta2.BackupPhaseRunning {
			t.Fatalf("stalled-%d: phase %q (%s), want Running until its deadline", i, b.Status.Phase, b.Status.Reason)
		}
	}
	if n := tp.accepted.Load(); n < 1 || n > 2 {
		t.Fatalf("%d connections reached the stalled store, want 1-2 (two backups of one namespace at a time)", n)
	}
}
