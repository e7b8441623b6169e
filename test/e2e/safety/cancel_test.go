//go:build e2e

package safety

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestCancelledRestoreKeepsTheReplacedVolumes is the first reproduction of issue 28: an in-place
// restore of a cluster on volumes is deleted (`kubectl delete etcdrestore`) while it is seeding,
// after it deleted the old cluster and retained its volumes. The garbage collector must not
// take those volumes with it: they are the old cluster's only data until a restore is
// verified. A new restore of the same backup then succeeds, and still leaves them alone.
//
// The restore is held in Seeding by the cluster's StorageClass, replaced before the restore by
// one of the same name whose provisioner nothing runs: the old volume stays bound, the
// restorable check runs on a scratch emptyDir, and the new members' volumes stay Pending. (A
// deleted class no longer does: the preflight refuses a class that does not exist.) (A ResourceQuota of zero pods made after the check raced with the
// replacement's own preflight, which then refused the restore, correctly, before it changed
// anything.)
func TestCancelledRestoreKeepsTheReplacedVolumes(t *testing.T) {
	f, ns, bucket := setup(t, "safety-cancel")
	class := f.HostPathClass(t, "e2e-"+ns)
	c := newCluster(ns, "demo", true)
	c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName = &class.Name
	f.Create(t, c)
	f.WaitClusterAvailable(t, ns, "demo", 1, 3*time.Minute)
	framework.PutDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, "demo")), "/demo/", 0, keys)
	backup := f.OneShotBackup(t, bucket, ns, "demo", "demo/etcd.backup", "creds")
	old := memberVolumes(t, f, ns, "demo")
	if len(old) == 0 {
		t.Fatal("the cluster has no volumes")
	}

	restore := func(name string) {
		f.Create(t, &etcdv1beta2.EtcdRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: etcdv1beta2.RestoreSpec{
				EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "demo"},
				BackupRef:   &etcdv1beta2.LocalObjectReference{Name: backup.Name},
			},
		})
	}
	if err := f.Client.Delete(t.Context(), class.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	stalled := class.DeepCopy()
	stalled.Provisioner = "e2e.invalid/nothing-provisions-this"
	f.Create(t, stalled)
	restore("cancelled")
	framework.Eventually(t, 3*time.Minute, "the old cluster replaced and its volumes retained", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "cancelled")
		if err != nil {
			return false, err
		}
		if rs.Status.Phase == etcdv1beta2.RestorePhaseFailed || rs.Status.Succeeded {
			t.Fatalf("the restore finished before it could be cancelled: %s %s", rs.Status.Phase, rs.Status.Reason)
		}
		c, err := f.GetCluster(ctx, ns, "demo")
		replaced := err == nil && c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil
		return replaced && len(rs.Status.RetainedVolumes) == len(old), fmt.Errorf("phase %s, retained %v, cluster replaced %v", rs.Status.Phase, rs.Status.RetainedVolumes, replaced)
	})

	// Cancel it as a user would: kubectl delete (background propagation).
	rs, err := f.GetRestore(t.Context(), ns, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deleting EtcdRestore cancelled in phase %s, retaining %v", rs.Status.Phase, rs.Status.RetainedVolumes)
	deleteRestore(t, f, rs, metav1.DeletePropagationBackground)
	keptVolumes(t, f, old)

	// The backup is still there to restore from.
	if err := f.Client.Delete(t.Context(), stalled); err != nil {
		t.Fatal(err)
	}
	f.Create(t, class.DeepCopy())
	restore("retry")
	rs = f.WaitRestoreSucceeded(t, ns, "retry", 5*time.Minute)
	t.Logf("restore after the cancelled one: RTO %s", rs.Status.Duration.Duration)
	checkKeys(t, f, ns, "demo", "/demo/", keys)
	keptVolumes(t, f, old)
}

// memberVolumes are the volumes of cluster name's members.
func memberVolumes(t *testing.T, f *framework.Framework, ns, name string) []corev1.PersistentVolumeClaim {
	t.Helper()
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := f.Client.List(t.Context(), pvcs, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	return pvcs.Items
}

// keptVolumes fails unless every volume of want is still there, the same object, not deleting,
// with no owner that could take it away.
func keptVolumes(t *testing.T, f *framework.Framework, want []corev1.PersistentVolumeClaim) {
	t.Helper()
	for _, pvc := range want {
		now := &corev1.PersistentVolumeClaim{}
		err := f.Client.Get(t.Context(), client.ObjectKeyFromObject(&pvc), now)
		if err != nil || now.UID != pvc.UID || now.DeletionTimestamp != nil {
			t.Fatalf("volume %s of the replaced cluster went away (err %v, deleting %v)", pvc.Name, err, now.DeletionTimestamp)
		}
		if i := slices.IndexFunc(now.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.Kind == "EtcdRestore" }); i >= 0 {
			t.Fatalf("volume %s is owned by EtcdRestore %s: deleting that record deletes it", now.Name, now.OwnerReferences[i].Name)
		}
	}
}
