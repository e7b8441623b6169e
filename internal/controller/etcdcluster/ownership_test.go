package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// ownedBy returns a controller reference to an EtcdCluster named name with UID uid.
func ownedBy(name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster", Name: name, UID: uid,
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}
}

func ptrTo[T any](v T) *T { return &v }

func withPVC(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster {
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	return c
}

// foreignPod is a member-like pod of cluster c (labels and all) controlled by owners.
func foreignPod(ns, name string, owners []metav1.OwnerReference) *corev1.Pod {
	c := newCluster(ns, "c", 1)
	p := member.NewPod(c, name, "3.6.16", "new", name+"="+member.PeerURL(c, name))
	p.OwnerReferences = owners
	// Made by another operator, or by this one's previous release: no spec hash recorded.
	delete(p.Annotations, member.SpecHashAnnotation)
	return p
}

func foreignPVC(ns, name string, owners []metav1.OwnerReference) *corev1.PersistentVolumeClaim {
	pvc := member.NewPVC(withPVC(newCluster(ns, "c", 1)), name)
	pvc.OwnerReferences = owners
	return pvc
}

// TestRecreatedClusterLeavesOldIncarnationAlone: pods and a volume of a deleted EtcdCluster of
// the same name (controlled by its old UID) are neither members, nor deleted, nor reused: the
// new cluster seeds itself under a name none of them holds.
func TestRecreatedClusterLeavesOldIncarnationAlone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "recreated")
	old := ownedBy("c", "old-incarnation-uid")
	var uids []types.UID
	for _, obj := range []client.Object{foreignPod(ns, "c-0", old), foreignPod(ns, "c-1", old), foreignPVC(ns, "c-4", old)} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, obj.GetUID())
	}
	if err := k8s.Create(ctx, newCluster(ns, "c", 1)); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	testutil.Eventually(t, testutil.Timeout, "new cluster seeded as c-5 and available", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if got := memberNames(f, true); !slices.Equal(got, []string{"c-5"}) || condition(c, "Available") != "True/ClusterHealthy" {
			return fmt.Errorf("voters %v Available %s", got, condition(c, "Available"))
		}
		return nil
	}))
	testutil.Consistently(t, 3*time.Second, "old incarnation untouched", testutil.NoError(func() error {
		for i, obj := range []client.Object{&corev1.Pod{}, &corev1.Pod{}, &corev1.PersistentVolumeClaim{}} {
			name := []string{"c-0", "c-1", "c-4"}[i]
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
				return err
			}
			if ref := metav1.GetControllerOf(obj); obj.GetUID() != uids[i] || obj.GetDeletionTimestamp() != nil || ref == nil || ref.UID != "old-incarnation-uid" {
				return fmt.Errorf("%s changed: uid %s deletion %v owners %v", name, obj.GetUID(), obj.GetDeletionTimestamp(), obj.GetOwnerReferences())
			}
		}
		if c := getCluster(t, ns, "c"); c.Status.Size != 1 || !slices.Equal(c.Status.Members.Ready, []string{"c-5"}) {
			return fmt.Errorf("status counts foreign pods: size %d members %+v", c.Status.Size, c.Status.Members)
		}
		return nil
	}))
}

// TestForeignServiceNotTakenOver: a Service named <c>-client that the cluster does not control
// is not patched or adopted; the cluster says NotOwned (with one Warning event) and creates
// nothing until it is gone.
func TestForeignServiceNotTakenOver(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-svc")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "c-client", Namespace: ns, Labels: map[string]string{"team": "b"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if err := k8s.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, newCluster(ns, "c", 1)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "Degraded NotOwned", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Degraded") != "True/NotOwned" {
			return fmt.Errorf("Degraded %s", condition(c, "Degraded"))
		}
		return nil
	}))
	testutil.Eventually(t, testutil.Timeout, "one Warning event", testutil.NoError(func() error { return warningEvents(ns, etcdv1beta2.ReasonNotOwned, 1) }))
	anotherPass(t, ns)
	if err := warningEvents(ns, etcdv1beta2.ReasonNotOwned, 1); err != nil {
		t.Fatalf("after another pass: %v (one event per flip, not per pass)", err)
	}
	got := &corev1.Service{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 || got.Spec.Selector["app"] != "theirs" || len(got.Spec.Ports) != 1 || got.Spec.Ports[0].Port != 80 {
		t.Fatalf("foreign Service changed: owners %v spec %+v", got.OwnerReferences, got.Spec)
	}
	if pods := podNames(t, ns); len(pods) != 0 {
		t.Fatalf("pods %v created next to a foreign Service", pods)
	}
	if err := k8s.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "own Service and seed once the foreign one is gone", testutil.NoError(func() error {
		own := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), own); err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(own); ref == nil || ref.Name != "c" || !slices.Equal(podNames(t, ns), []string{"c-0"}) {
			return fmt.Errorf("Service owner %v pods %v", ref, podNames(t, ns))
		}
		return nil
	}))
}

// anotherPass changes the cluster's spec (a pod annotation, which applies to new pods only)
// and waits until a pass has observed it.
func anotherPass(t *testing.T, ns string) {
	t.Helper()
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		if c.Spec.Pod == nil {
			c.Spec.Pod = &etcdv1beta2.PodPolicy{}
		}
		if c.Spec.Pod.Annotations == nil {
			c.Spec.Pod.Annotations = map[string]string{}
		}
		c.Spec.Pod.Annotations["test-pass"] = fmt.Sprint(c.Generation)
	})
	testutil.Eventually(t, testutil.Timeout, "a pass over the new generation", testutil.NoError(func() error {
		if got := getCluster(t, ns, "c"); got.Status.ObservedGeneration < got.Generation {
			return fmt.Errorf("observed generation %d of %d", got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	}))
}

// conflictBackoff retries a test's write of an object the operator (or the suite's fake
// kubelet) writes too (adoption, finalizer, status) for up to ~20 s, not retry.DefaultRetry's
// ~0.1 s, which a loaded CI machine ran out of.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 20 * time.Millisecond, Factor: 2, Jitter: 0.1}

// updateCluster changes the spec of cluster c, retrying on conflicts with status patches.
func updateCluster(t *testing.T, ns string, change func(c *etcdv1beta2.EtcdCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		c := getCluster(t, ns, "c")
		change(c)
		return k8s.Update(context.Background(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// warningEvents checks the Warning events with reason add up to count (repeats of one event
// are counted in its count field).
func warningEvents(ns, reason string, count int32) error {
	evs := &corev1.EventList{}
	if err := k8s.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
		return err
	}
	var n int32
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	if n != count {
		return fmt.Errorf("%d Warning %s events, want %d", n, reason, count)
	}
	return nil
}

// TestLegacySeedAdopted: a seed the previous release's restore operator made (no controller,
// an owner reference to the EtcdRestore) is adopted and loses that reference, so deleting the
// finished EtcdRestore cannot garbage-collect the running member.
func TestLegacySeedAdopted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "legacy")
	c := newCluster(ns, "c", 2)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r", SeedMember: "c-0"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	restoreRef := metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: "r", UID: "restore-uid"}
	seed := foreignPod(ns, "c-0", []metav1.OwnerReference{restoreRef})
	if err := k8s.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, fakeFor(clusterConfig(ns)), 2)
	c = getCluster(t, ns, "c")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(seed), seed); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(seed); ref == nil || ref.UID != c.UID || len(seed.OwnerReferences) != 1 {
		t.Fatalf("seed owners %v, want the cluster alone", seed.OwnerReferences)
	}
}

// TestMemberObjectsOfOthersNeverUsed calls the pod and volume steps directly: a volume at a
// member's name that the cluster does not control is not mounted, and a volume re-owned since
// it was observed (an in-place restore retaining it) is not deleted.
func TestMemberObjectsOfOthersNeverUsed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-objects")
	c := withPVC(newCluster(ns, "c", 1))
	c.Spec.Paused = true // the controller only observes; the test drives the steps
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: k8s, APIReader: k8s}
	if err := k8s.Create(ctx, foreignPVC(ns, "c-0", nil)); err != nil {
		t.Fatal(err)
	}
	err := r.createMemberPod(ctx, c, "c-0", "3.6.16", "new", "c-0="+member.PeerURL(c, "c-0"))
	if !errors.Is(err, errNotOwned) {
		t.Fatalf("createMemberPod on a foreign volume: %v, want errNotOwned", err)
	}
	if pods := podNames(t, ns); len(pods) != 0 {
		t.Fatalf("pods %v created on a foreign volume", pods)
	}

	mine := member.NewPVC(c, "c-1")
	if err := controllerutil.SetControllerReference(c, mine, k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	observed := mine.DeepCopy()
	// The restore operator retains it: its controller reference goes, the restore's comes.
	mine.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: "r", UID: "restore-uid"}}
	mine.Annotations = map[string]string{etcdv1beta2.AnnotationRetainedBy: "r"}
	if err := k8s.Update(ctx, mine); err != nil {
		t.Fatal(err)
	}
	obs := &observation{pods: map[string]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{"c-1": observed}}
	if err := r.deleteMember(ctx, c, obs, "c-1", true); !errors.Is(err, errNotOwned) {
		t.Fatalf("deleteMember of a re-owned volume: %v, want errNotOwned", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mine), mine); err != nil || mine.DeletionTimestamp != nil {
		t.Fatalf("re-owned volume: %v, deletion %v; want it kept", err, mine.DeletionTimestamp)
	}
}
