package etcdrestore

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// pvcCluster is a cluster whose members run on PersistentVolumeClaims.
func pvcCluster(ns, name string, size int32) *etcdv1beta2.EtcdCluster {
	c := cluster(ns, name, size)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	return c
}

// controllerRef is the reference the etcd operator sets on what c controls.
func controllerRef(c *etcdv1beta2.EtcdCluster) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: c.Name, UID: c.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// memberPVC creates the volume of member name of c, controlled by c, as the etcd operator does.
func memberPVC(t *testing.T, c *etcdv1beta2.EtcdCluster, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := member.NewPVC(c, name)
	pvc.OwnerReferences = []metav1.OwnerReference{controllerRef(c)}
	create(t, pvc)
	return pvc
}

// memberPod creates the pod of member name of c, controlled by c.
func memberPod(t *testing.T, c *etcdv1beta2.EtcdCluster, name string) *corev1.Pod {
	t.Helper()
	pod := member.NewPod(c, name, c.Spec.Version, "new", name+"="+member.PeerURL(c, name))
	pod.OwnerReferences = []metav1.OwnerReference{controllerRef(c)}
	create(t, pod)
	return pod
}

func getPod(t *testing.T, ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, p)
}

func getPVC(t *testing.T, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	p := &corev1.PersistentVolumeClaim{}
	return p, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, p)
}

// waitRestoring waits for the cluster rs makes: a new one (not uid) whose
// bootstrap.restore.source the etcd operator would build its members from.
func waitRestoring(t *testing.T, ns, name string, old types.UID) *etcdv1beta2.EtcdCluster {
	t.Helper()
	var c *etcdv1beta2.EtcdCluster
	testutil.Eventually(t, testutil.Timeout, "cluster "+name+" restoring", func() (bool, string) {
		var err error
		c, err = getCluster(t, ns, name)
		if err != nil {
			return false, err.Error()
		}
		if c.UID == old && c.DeletionTimestamp != nil {
			c.Finalizers = nil // envtest runs no garbage collector
			_ = k8s.Update(t.Context(), c)
			return false, "finalizer removed"
		}
		ok := c.UID != old && c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil && c.Spec.Bootstrap.Restore.Source != nil
		return ok, fmt.Sprintf("uid %s bootstrap %+v", c.UID, c.Spec.Bootstrap)
	})
	return c
}

// restoredBy plays the etcd operator: it built every member of c from the backup, they formed
// the cluster and each serves st's figures (Restored=True). members (the fake checks) say the
// same for every restored member.
func restoredBy(t *testing.T, c *etcdv1beta2.EtcdCluster, st etcdv1beta2.ClusterRestoreStatus) {
	t.Helper()
	if len(st.Members) == 0 {
		st.Members = c.Spec.Bootstrap.Restore.Members
	}
	st.MembersVerified = int32(len(st.Members)) //nolint:gosec // a few members
	for _, m := range st.Members {
		members.set(member.Host(c, m), restoreboot.MemberState{Hash: uint32(st.Hash), Keys: st.Keys, Revision: st.Revision}) //nolint:gosec // a test hash
	}
	c.Status.ClusterID = "c1"
	c.Status.Restore = &st
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionRestored, Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonRestoreSucceeded, Message: "verified"})
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// restoreFailedIn plays the etcd operator: building c from the backup failed with why.
func restoreFailedIn(t *testing.T, c *etcdv1beta2.EtcdCluster, why, msg string) {
	t.Helper()
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionRestored, Status: metav1.ConditionFalse, Reason: why, Message: msg})
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// grown plays the etcd operator: c is Available with the members ready.
func grown(t *testing.T, c *etcdv1beta2.EtcdCluster, ready ...string) {
	t.Helper()
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ClusterHealthy"})
	c.Status.Members.Ready = ready
	c.Status.ReadyMembers = int32(len(ready)) //nolint:gosec // a few members
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// gone reports whether obj was deleted (envtest keeps a PVC with its protection finalizer).
func gone(err error, obj metav1.Object) bool {
	return err != nil || obj.GetDeletionTimestamp() != nil
}

// pvcClusterWithVolumes creates a PVC cluster and one member volume per member
// (<name>-0 .. <name>-<size-1>), controlled by it.
func pvcClusterWithVolumes(t *testing.T, ns, name string, size int32) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := pvcCluster(ns, name, size)
	create(t, c)
	for i := range size {
		memberPVC(t, c, fmt.Sprintf("%s-%d", name, i))
	}
	return c
}

// checkPasses plays the Job controller and the kubelet for an in-place restore's check: its
// restore step exited 0 with result (a restoreseed.Result). It returns the pod as made from the
// Job the restore operator made.
func checkPasses(t *testing.T, ns, restore, result string) *corev1.Pod {
	t.Helper()
	_, pod := checkEnds(t, ns, restore, 0, result)
	return pod
}

// checkEnds plays the Job controller and the kubelet for the check of restore: its restore
// step exited with code and result. It returns the Job and its pod as made.
func checkEnds(t *testing.T, ns, restore string, code int32, result string) (*batchv1.Job, *corev1.Pod) {
	t.Helper()
	job, pod := playJob(t, ns, restore)
	if pod == nil {
		t.Fatalf("the API server refused the pod of restore %s's check", restore)
	}
	made := pod.DeepCopy()
	pod.Status.Phase = corev1.PodSucceeded
	if code != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: restoreboot.InitRestore, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: result}}}}
	if err := k8s.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return job, made
}

// playJob plays the Job controller (envtest runs none) for restore's check Job, once it
// exists: it creates the Job's pod from its template as the controller does (generated name,
// the controller's labels, the Job as controller); a pod the API server refuses becomes the
// controller's FailedCreate Warning event on the Job, and pod is nil.
func playJob(t *testing.T, ns, restore string) (*batchv1.Job, *corev1.Pod) {
	t.Helper()
	job := &batchv1.Job{}
	testutil.Eventually(t, testutil.Timeout, "check Job of "+restore, func() (bool, string) {
		err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: restore + "-restore-check"}, job)
		return err == nil, fmt.Sprint(err)
	})
	pod := &corev1.Pod{ObjectMeta: *job.Spec.Template.ObjectMeta.DeepCopy(), Spec: *job.Spec.Template.Spec.DeepCopy()}
	pod.Namespace, pod.GenerateName = ns, job.Name+"-"
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1.ControllerUidLabel], pod.Labels[batchv1.JobNameLabel] = string(job.UID), job.Name
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	err := k8s.Create(t.Context(), pod)
	if err == nil {
		return job, pod
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatal(err)
	}
	now := metav1.Now()
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: job.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: job.Name, UID: job.UID},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Message: "Error creating: " + err.Error(),
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: corev1.EventSource{Component: "job-controller"},
	})
	return job, nil
}

// restoredOK is the result of a check pod that restored the test backup.
const restoredOK = `{"outcome":"Restored","revision":201,"hashKV":777}`
