package backupvolume

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

func claim(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8s.Create(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

func pvcSource(claim, path string) etcdv1beta2.BackupSource {
	return etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCSource{ClaimName: claim, Path: path}}
}

func schedule(t *testing.T, ns, name, claim string) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	s := &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "0 * * * *",
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"},
				StorageType: etcdv1beta2.BackupStorageTypePVC, BackupSource: pvcSource(claim, "c/nightly"),
			}},
		},
	}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// server reads the claim's Secret, Service and Pod; nil for those that do not exist.
func server(t *testing.T, pvc *corev1.PersistentVolumeClaim) (*corev1.Secret, *corev1.Service, *corev1.Pod) {
	t.Helper()
	key := client.ObjectKey{Namespace: pvc.Namespace, Name: backupvolume.Name(pvc.Name)}
	get := func(o client.Object) client.Object {
		if err := k8s.Get(t.Context(), key, o); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		return o
	}
	var s *corev1.Secret
	var svc *corev1.Service
	var p *corev1.Pod
	if o := get(&corev1.Secret{}); o != nil {
		s = o.(*corev1.Secret)
	}
	if o := get(&corev1.Service{}); o != nil {
		svc = o.(*corev1.Service)
	}
	if o := get(&corev1.Pod{}); o != nil {
		p = o.(*corev1.Pod)
	}
	return s, svc, p
}

func waitServing(t *testing.T, pvc *corev1.PersistentVolumeClaim) (*corev1.Secret, *corev1.Service, *corev1.Pod) {
	t.Helper()
	var s *corev1.Secret
	var svc *corev1.Service
	var p *corev1.Pod
	testutil.Eventually(t, 20*time.Second, "the claim's server objects exist", func() (bool, string) {
		s, svc, p = server(t, pvc)
		return s != nil && svc != nil && p != nil, "not yet"
	})
	return s, svc, p
}

func waitStopped(t *testing.T, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "the claim's server objects are deleted", func() (bool, string) {
		s, svc, p := server(t, pvc)
		// envtest runs no kubelet: a deleted pod stays, marked for deletion.
		return s == nil && svc == nil && (p == nil || p.DeletionTimestamp != nil), "still there"
	})
}

// TestServerWhileAScheduleNamesTheClaim: a schedule to a claim gets the claim a server (Secret,
// Service, Pod, all controlled by the claim; a restricted pod on the claim; a certificate for the
// Service's name), and deleting the schedule stops it while the claim stays.
func TestServerWhileAScheduleNamesTheClaim(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "bv")
	pvc := claim(t, ns, "etcd-backups")
	s := schedule(t, ns, "nightly", pvc.Name)
	secret, svc, pod := waitServing(t, pvc)
	for _, o := range []client.Object{secret, svc, pod} {
		if !metav1.IsControlledBy(o, pvc) {
			t.Errorf("%T %s is not controlled by the claim: %+v", o, o.GetName(), o.GetOwnerReferences())
		}
	}
	if v, err := testutil.RestrictedViolations(pod); err != nil || len(v) > 0 {
		t.Errorf("the server pod breaks Pod Security restricted: %v %v", v, err)
	}
	vol := pod.Spec.Volumes[slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })]
	if vol.PersistentVolumeClaim.ClaimName != pvc.Name || pod.Spec.Containers[0].Image != testImage || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("server pod mounts %q, image %q, service account token %v", vol.PersistentVolumeClaim.ClaimName, pod.Spec.Containers[0].Image, *pod.Spec.AutomountServiceAccountToken)
	}
	if svc.Spec.Selector[backupvolume.LabelClaim] != pod.Labels[backupvolume.LabelClaim] {
		t.Errorf("the Service selects %v, the pod is labelled %v", svc.Spec.Selector, pod.Labels)
	}
	if got, want := string(secret.Data[volume.SecretURLKey]), backupvolume.URL(pvc.Name, ns); got != want {
		t.Errorf("url = %q, want %q", got, want)
	}
	block, _ := pem.Decode(secret.Data[volume.SecretCertKey])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.VerifyHostname(backupvolume.Name(pvc.Name)+"."+ns+".svc") != nil {
		t.Errorf("the certificate does not name the Service: %v, %v", err, cert.DNSNames)
	}
	if _, err := volume.ClientConfig(secret.Data); err != nil {
		t.Errorf("clients cannot use the Secret: %v", err)
	}

	if err := k8s.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pvc)
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}); err != nil {
		t.Fatalf("the claim: %v", err)
	}
}

// TestOnlyUsersThatStillNeedTheClaim: a finished one-shot backup or restore does not keep a
// server; a periodic backup, an unfinished restore by backupRef and a cluster still restoring
// from the claim do, each alone.
func TestOnlyUsersThatStillNeedTheClaim(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "bv")
	pvc := claim(t, ns, "etcd-backups")
	done := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "done"},
		Spec:       etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}, StorageType: etcdv1beta2.BackupStorageTypePVC, BackupSource: pvcSource(pvc.Name, "c/one")},
	}
	if err := k8s.Create(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	waitServing(t, pvc) // unfinished: it is about to write
	done.Status.Phase = etcdv1beta2.BackupPhaseCompleted
	if err := k8s.Status().Update(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pvc)

	// A restore of that backup needs the claim until it finishes.
	rs := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec:       etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "c"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "done"}},
	}
	if err := k8s.Create(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	waitServing(t, pvc)
	rs.Status.Phase = etcdv1beta2.RestorePhaseSucceeded
	if err := k8s.Status().Update(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pvc)

	// A cluster restored from the claim needs it until it is Restored.
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Bootstrap: &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{
			Source: &etcdv1beta2.RestoreSource{StorageType: etcdv1beta2.BackupStorageTypePVC, BackupSource: pvcSource(pvc.Name, "c/one")},
		}}},
	}
	if err := k8s.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	waitServing(t, pvc)
	c.Status.Conditions = []metav1.Condition{{Type: etcdv1beta2.ClusterConditionRestored, Status: metav1.ConditionTrue, Reason: "Verified", LastTransitionTime: metav1.Now()}}
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pvc)
}

// TestNameTakenByAnotherObject: a Secret of the server's name that the claim does not control
// is left alone (not used, not deleted, no pod started), and the claim says why in an event.
func TestNameTakenByAnotherObject(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "bv")
	pvc := claim(t, ns, "etcd-backups")
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backupvolume.Name(pvc.Name)},
		StringData: map[string]string{volume.SecretURLKey: "https://attacker.example:8443", volume.SecretTokenKey: "t"},
	}
	if err := k8s.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	s := schedule(t, ns, "nightly", pvc.Name)
	testutil.Eventually(t, 20*time.Second, "a VolumeServerNameTaken event on the claim", func() (bool, string) {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == pvc.UID && e.Reason == "VolumeServerNameTaken" && strings.Contains(e.Message, foreign.Name) {
				return true, ""
			}
		}
		return false, "no event yet"
	})
	_, svc, pod := server(t, pvc)
	if svc != nil || pod != nil {
		t.Errorf("service %v, pod %v made beside a Secret that is not the claim's", svc != nil, pod != nil)
	}
	if err := k8s.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) //nolint:forbidigo // proves the stop that follows the schedule's deletion does NOT delete the foreign Secret
	got := &corev1.Secret{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(foreign), got); err != nil || got.UID != foreign.UID {
		t.Fatalf("the foreign Secret: %v (uid %s, was %s)", err, got.UID, foreign.UID)
	}
}

// TestClaimBeingDeletedStopsItsServer: a claim being deleted (held by its protection finalizer
// while a pod mounts it) loses its server, so the deletion can complete, even while a schedule
// still names it.
func TestClaimBeingDeletedStopsItsServer(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "bv")
	pvc := claim(t, ns, "etcd-backups")
	schedule(t, ns, "nightly", pvc.Name)
	waitServing(t, pvc)
	pvc.Finalizers = []string{"kubernetes.io/pvc-protection"} // what the API server adds; envtest runs no controller that does
	if err := k8s.Update(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pvc)
	pvc.Finalizers = nil
	_ = k8s.Update(context.Background(), pvc)
}
