package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// Waits for the operators' success paths: a backup stored, a restore's cluster and seed made.

// waitBackupCompleted waits until EtcdBackup ns/name is Completed; Failed fails the test at once.
func waitBackupCompleted(t *testing.T, ns, name string) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{}
	waitFor(t, fmt.Sprintf("EtcdBackup %s/%s to complete", ns, name), func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		switch b.Status.Phase {
		case etcdv1beta2.BackupPhaseCompleted:
			return nil
		case etcdv1beta2.BackupPhaseFailed: // terminal: no use waiting
			t.Fatalf("EtcdBackup %s/%s failed: %s", ns, name, b.Status.Reason)
		}
		return fmt.Errorf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions)
	})
	return b
}

// storedSHA256 reads the object b's status points to, with b's storage block and Secret.
func storedSHA256(t *testing.T, b *etcdv1beta2.EtcdBackup) string {
	t.Helper()
	base, err := storage.FromSpec(&b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := base.At(b.Status.Location)
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(t.Context(), loc, storage.APISecrets{Reader: env.Client, Namespace: b.Namespace}, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sum, _ := snapshottest.ObjectSHA256(t, store, loc.Key)
	return sum
}

// waitSeedPod waits until EtcdRestore ns/name created its EtcdCluster (named by the restore,
// with the verified backup as bootstrap.restore.source) and the etcd operator the cluster's
// seed member pod, controlled by that cluster.
func waitSeedPod(t *testing.T, ns, name string) {
	t.Helper()
	rs := &etcdv1beta2.EtcdRestore{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, rs); err != nil {
		t.Fatal(err)
	}
	c := &etcdv1beta2.EtcdCluster{}
	waitFor(t, fmt.Sprintf("EtcdCluster %s/%s of the restore", ns, rs.Spec.EtcdCluster.Name), func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: rs.Spec.EtcdCluster.Name}, c); err != nil {
			return err
		}
		if b := c.Spec.Bootstrap; b == nil || b.Restore == nil || b.Restore.RestoreName != name || b.Restore.SeedMember == "" || b.Restore.Source == nil {
			return fmt.Errorf("bootstrap %+v, want a restore by %s", b, name)
		}
		return nil
	})
	seed := c.Spec.Bootstrap.Restore.SeedMember
	waitFor(t, fmt.Sprintf("seed pod %s/%s", ns, seed), func(ctx context.Context) error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: seed}, pod); err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "EtcdCluster" || ref.UID != c.UID {
			return fmt.Errorf("pod %s is controlled by %+v, want EtcdCluster %s (%s)", seed, ref, c.Name, c.UID)
		}
		return nil
	})
}
