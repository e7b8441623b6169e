package etcdbackup

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// kstatus reads Ready, Reconciling and Stalled as "Ready=False/Reason Reconciling=<none> ...",
// and fails unless status.observedGeneration and every one present are of b's generation.
func kstatus(b *etcdv1beta2.EtcdBackup) (string, error) {
	if b.Status.ObservedGeneration != b.Generation {
		return "", fmt.Errorf("status.observedGeneration %d, generation %d", b.Status.ObservedGeneration, b.Generation)
	}
	out := ""
	for _, typ := range []string{etcdv1beta2.ConditionReady, etcdv1beta2.ConditionReconciling, etcdv1beta2.ConditionStalled} {
		got := "<none>"
		if c := meta.FindStatusCondition(b.Status.Conditions, typ); c != nil {
			if c.ObservedGeneration != b.Generation {
				return "", fmt.Errorf("%s is of generation %d, the backup's is %d", typ, c.ObservedGeneration, b.Generation)
			}
			got = string(c.Status) + "/" + c.Reason
		}
		out += fmt.Sprintf(" %s=%s", typ, got)
	}
	return out[1:], nil
}

// waitKstatus waits until the backup's Ready, Reconciling and Stalled read want.
func waitKstatus(t *testing.T, ns, name, want string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, name+" "+want, func() (bool, string) {
		b := &etcdv1beta2.EtcdBackup{}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			return false, err.Error()
		}
		got, err := kstatus(b)
		if err != nil {
			return false, err.Error()
		}
		return got == want, got
	})
}

// TestReadyCondition: a completed backup is Ready; one that waits to retry a transient failure
// is Reconciling; one that failed for good is Stalled with the failure's reason. Every outcome
// carries observedGeneration, so kstatus-based tools trust it.
func TestReadyCondition(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	ns := namespace(t)
	createSecret(t, ns, "creds", bucket.Secret)

	create(t, newBackup(ns, "ok", []string{e.Endpoint}, bucket, "ok.backup", "creds"))
	waitKstatus(t, ns, "ok", "Ready=True/BackupSucceeded Reconciling=<none> Stalled=<none>", 60*time.Second)

	gone := newBackup(ns, "gone", nil, bucket, "gone.backup", "creds")
	gone.Spec.EtcdCluster = &etcdv1beta2.EtcdClusterRef{Name: "nope"}
	create(t, gone)
	waitKstatus(t, ns, "gone", "Ready=False/ClusterNotFound Reconciling=<none> Stalled=True/ClusterNotFound", 60*time.Second)

	create(t, newBackup(ns, "retry", []string{"http://127.0.0.1:1"}, bucket, "retry.backup", "creds"))
	waitKstatus(t, ns, "retry", "Ready=False/EtcdUnreachable Reconciling=True/EtcdUnreachable Stalled=<none>", 60*time.Second)
	waitKstatus(t, ns, "retry", "Ready=False/EtcdUnreachable Reconciling=<none> Stalled=True/EtcdUnreachable", 60*time.Second)
}
