package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// memberVolume creates the volume of member name, controlled by c (controlled) or by nothing.
func memberVolume(t *testing.T, c *etcdv1beta2.EtcdCluster, name string, controlled bool, annotations map[string]string, owners ...metav1.OwnerReference) *corev1.PersistentVolumeClaim {
	t.Helper()
	withPVC := c.DeepCopy()
	withPVC.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	pvc := member.NewPVC(withPVC, name)
	pvc.Annotations = annotations
	pvc.OwnerReferences = owners
	if controlled {
		if err := controllerutil.SetControllerReference(c, pvc, k8s.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// replacingRestore creates the EtcdRestore name in ns, which the tests mark clusters as
// replaced by (the etcd operator reads it to know the replacement stands), and returns its UID.
func replacingRestore(t *testing.T, ns, name string) string {
	t.Helper()
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "c"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "b"}}}
	if err := k8s.Create(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	return string(rs.UID)
}

func getVolume(t *testing.T, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc)
	return pvc, err
}

// TestReplacedClusterVolumesAreRetained: the restore operator marks a cluster it is about to
// replace in place (replaced-by, replaced-by-name); the etcd operator, which alone writes
// volumes, then takes its controller reference off every volume the cluster controls and
// marks them retained by that restore (name and UID), so that deleting the cluster (the
// garbage collector) and deleting the EtcdRestore both leave them. A volume the cluster does
// not control is not touched, and without the mark nothing changes.
func TestReplacedClusterVolumesAreRetained(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-retain")
	c := newCluster(ns, "c", 2)
	c.Finalizers = []string{"test.etcd.database.coreos.com/hold"}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	memberVolume(t, c, "c-0", true, nil)
	memberVolume(t, c, "c-1", true, nil)
	stranger := memberVolume(t, c, "c-9", false, map[string]string{"team": "b"})
	testutil.Consistently(t, 2*time.Second, "volumes of a cluster not replaced stay its own", testutil.NoError(func() error {
		for _, n := range []string{"c-0", "c-1"} {
			if pvc, err := getVolume(t, ns, n); err != nil || !metav1.IsControlledBy(pvc, c) {
				return fmt.Errorf("volume %s: %w", n, err)
			}
		}
		return nil
	}))

	r1 := replacingRestore(t, ns, "r1")
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationReplacedBy: r1, etcdv1beta2.AnnotationReplacedByName: "r1"}
	})
	retained := func() error {
		for _, n := range []string{"c-0", "c-1"} {
			pvc, err := getVolume(t, ns, n)
			if err != nil {
				return err
			}
			if len(pvc.OwnerReferences) != 0 || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "r1" || pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != r1 {
				return fmt.Errorf("volume %s owners %v annotations %v", n, pvc.OwnerReferences, pvc.Annotations)
			}
		}
		return nil
	}
	testutil.Eventually(t, testutil.Timeout, "volumes retained for r1", testutil.NoError(retained))
	if s, err := getVolume(t, ns, "c-9"); err != nil || s.ResourceVersion != stranger.ResourceVersion {
		t.Fatalf("the stranger's volume was touched: %v", err)
	}
	// The cluster is deleted: its volumes stay retained.
	if err := k8s.Delete(ctx, getCluster(t, ns, "c")); err != nil {
		t.Fatal(err)
	}
	testutil.Consistently(t, 2*time.Second, "volumes retained while the cluster goes", testutil.NoError(retained))
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Finalizers = nil })
}

// TestRetainedVolumesReleasedOnlyForTheVerifyingRestore: the restore operator marks the
// cluster it restored as verified (release-retained with its UID); the etcd operator then
// deletes exactly the volumes retained for that restore and owned by nothing. A volume retained
// for another restore, or by an earlier incarnation of the same restore name (another UID), or
// that someone took over since, stays; before the mark, nothing is deleted.
func TestRetainedVolumesReleasedOnlyForTheVerifyingRestore(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-release")
	c := newCluster(ns, "c", 1)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r1", SeedMember: "c-3"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	retainedFor := func(name, uid string) map[string]string {
		return map[string]string{etcdv1beta2.AnnotationRetainedBy: name, etcdv1beta2.AnnotationRestoreUID: uid}
	}
	memberVolume(t, c, "c-0", false, retainedFor("r1", "uid-of-r1"))
	memberVolume(t, c, "c-1", false, retainedFor("r1", "uid-of-r1"))
	memberVolume(t, c, "c-2", false, retainedFor("r1", "uid-of-an-older-r1"))
	memberVolume(t, c, "c-7", false, retainedFor("r0", "uid-of-r1"))
	taker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taker"}}
	if err := k8s.Create(ctx, taker); err != nil {
		t.Fatal(err)
	}
	memberVolume(t, c, "c-8", false, retainedFor("r1", "uid-of-r1"), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "taker", UID: taker.UID})
	all := []string{"c-0", "c-1", "c-2", "c-7", "c-8"}
	present := func(names ...string) error {
		for _, n := range names {
			if pvc, err := getVolume(t, ns, n); err != nil || pvc.DeletionTimestamp != nil {
				return fmt.Errorf("volume %s: %w", n, err)
			}
		}
		return nil
	}
	// Formed (the restore verified it), but not marked yet: nothing goes.
	// The operator writes the status too (a pass per volume event), hence the retries.
	if err := retry.RetryOnConflict(conflictBackoff, func() error {
		cur := getCluster(t, ns, "c")
		cur.Status.ClusterID = "abc"
		return k8s.Status().Update(ctx, cur)
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Consistently(t, 2*time.Second, "nothing released before the restore says so", testutil.NoError(func() error { return present(all...) }))

	if err := retry.RetryOnConflict(conflictBackoff, func() error {
		cur := getCluster(t, ns, "c")
		cur.Annotations = map[string]string{etcdv1beta2.AnnotationReleaseRetained: "uid-of-r1"}
		return k8s.Update(ctx, cur)
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"c-0", "c-1"} {
		testutil.Eventually(t, testutil.Timeout, "volume "+n+" released", testutil.NoError(func() error {
			pvc, err := getVolume(t, ns, n)
			if apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil) {
				return nil
			}
			return fmt.Errorf("volume %s still there: %w", n, err)
		}))
	}
	testutil.Consistently(t, 2*time.Second, "the others stay", testutil.NoError(func() error { return present("c-2", "c-7", "c-8") }))
}

// TestStuckPodsOfAReplacedClusterForceDeletedOnlyOnRequest: the pods of a cluster replaced in
// place that stay Terminating (a node that is gone never confirms) are force-deleted by the
// etcd operator only when the person's opt-in, copied by the restore operator, is on the
// cluster; a stuck pod the cluster does not control never is.
func TestStuckPodsOfAReplacedClusterForceDeletedOnlyOnRequest(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-stuck")
	c := newCluster(ns, "c", 1)
	c.Finalizers = []string{"test.etcd.database.coreos.com/hold"}
	c.Annotations = map[string]string{etcdv1beta2.AnnotationReplacedBy: replacingRestore(t, ns, "r1"), etcdv1beta2.AnnotationReplacedByName: "r1"}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	own := member.NewPod(c, "c-0", "3.6.16", "new", "")
	if err := controllerutil.SetControllerReference(c, own, k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	own.Spec.NodeName = "node-gone" // scheduled: its deletion waits for a kubelet that never answers
	stranger := member.NewPod(c, "c-7", "3.6.16", "new", "")
	stranger.Spec.NodeName = "node-gone"
	for _, p := range []*corev1.Pod{own, stranger} {
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Delete(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	podThere := func(p *corev1.Pod) error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.DeletionTimestamp == nil {
			return fmt.Errorf("pod %s not being deleted", p.Name)
		}
		return nil
	}
	// Stopped with the short grace, then stuck: left alone without the opt-in.
	testutil.Eventually(t, testutil.Timeout, "member stopped", testutil.NoError(func() error { return podThere(own) }))
	testutil.Consistently(t, 3*time.Second, "stuck pods stay without the opt-in", testutil.NoError(func() error {
		return errors.Join(podThere(own), podThere(stranger))
	}))
	cur := getCluster(t, ns, "c")
	cur.Annotations[etcdv1beta2.AnnotationForceDeleteStuckPods] = "true"
	if err := k8s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "the stuck member force-deleted", testutil.NoError(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(own), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod c-0 still there: %w", err)
		}
		return nil
	}))
	if err := podThere(stranger); err != nil {
		t.Fatalf("the stranger's stuck pod: %v", err)
	}
	cur = getCluster(t, ns, "c")
	cur.Finalizers = nil
	if err := k8s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
}

// TestRetainedVolumesOfThePreviousReleaseLoseTheirOwner: the previous release's restore
// operator made a restore the owner of the volumes it retained, so deleting the restore
// deleted them. After an upgrade, the etcd operator takes that owner reference off the volumes
// retained for the restore that made the cluster, and records the restore's UID instead: a
// later deletion of the restore leaves them, and its release still finds them.
func TestRetainedVolumesOfThePreviousReleaseLoseTheirOwner(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-legacyretained")
	c := newCluster(ns, "prod", 1)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "old", SeedMember: "prod-3"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	restoreRef := metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: "old", UID: types.UID("uid-of-old")}
	memberVolume(t, c, "prod-0", false, map[string]string{etcdv1beta2.AnnotationRetainedBy: "old"}, restoreRef)
	other := restoreRef
	other.Name, other.UID = "another", "uid-of-another"
	memberVolume(t, c, "prod-1", false, map[string]string{etcdv1beta2.AnnotationRetainedBy: "another"}, other)
	testutil.Eventually(t, testutil.Timeout, "owner reference taken off", testutil.NoError(func() error {
		pvc, err := getVolume(t, ns, "prod-0")
		if err != nil {
			return err
		}
		if len(pvc.OwnerReferences) != 0 || pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != "uid-of-old" || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "old" {
			return fmt.Errorf("owners %v annotations %v", pvc.OwnerReferences, pvc.Annotations)
		}
		return nil
	}))
	if pvc, err := getVolume(t, ns, "prod-1"); err != nil || len(pvc.OwnerReferences) != 1 {
		t.Fatalf("a volume another restore retains was changed: %v %+v", err, pvc.OwnerReferences)
	}
}

// TestPassOfALeavingClusterIsAbandoned: a pass that waits on etcd (a member killed while it
// answers holds the request until its timeout) is cancelled as soon as the cluster is marked
// replaced by a restore, so the restore's next steps (its volumes retained, then the same name
// re-created and built) do not wait for that timeout.
func TestPassOfALeavingClusterIsAbandoned(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "abandon")
	if err := k8s.Create(ctx, withPVC(newCluster(ns, "c", 1))); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 1)
	f.set(func(f *fakeEtcd) { f.hang = true })
	defer f.set(func(f *fakeEtcd) { f.hang = false })
	// A pass starts and hangs asking the members.
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Labels = map[string]string{"poke": "1"} })
	testutil.Eventually(t, testutil.Timeout, "a pass hanging on etcd", testutil.NoError(func() error {
		n := 0
		f.set(func(f *fakeEtcd) { n = f.hanging })
		if n == 0 {
			return errors.New("no request hangs yet")
		}
		return nil
	}))
	r1 := replacingRestore(t, ns, "r1")
	marked := time.Now()
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1beta2.AnnotationReplacedBy: r1, etcdv1beta2.AnnotationReplacedByName: "r1"}
	})
	testutil.Eventually(t, hangCap/2, "the volume retained without waiting for the hung request", testutil.NoError(func() error {
		pvc, err := getVolume(t, ns, "c-0")
		if err != nil {
			return err
		}
		if pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != r1 {
			return fmt.Errorf("not retained yet: %v", pvc.Annotations)
		}
		return nil
	}))
	if took := time.Since(marked); took > 5*time.Second {
		t.Fatalf("retained %s after the mark: the hung pass was not abandoned", took)
	}
}

// TestReplacedClusterOnVolumesStoppedBeforeItsDeletion: once the etcd operator has retained the
// volumes of a cluster on volumes that a standing EtcdRestore marked, it stops the member pods
// at once (a one-second grace period: the garbage collector would give each its own, and the
// leader would spend about 7 s handing leadership to members that stop too) before the restore
// deletes the cluster, and holds it: no pod is made again. A stranger's pod is not touched.
// When the restore is then deleted, or fails, before the cluster is, the replacement is off:
// the mark is cancelled, the volumes are given back (the cluster controls them again, the
// retained marks gone) and the marks leave the cluster.
func TestReplacedClusterOnVolumesStoppedBeforeItsDeletion(t *testing.T) {
	ctx := context.Background()
	for _, cancel := range []string{"deleted", "failed"} {
		t.Run(cancel, func(t *testing.T) {
			ns := namespace(t, "nokubelet-prestop")
			c := withPVC(newCluster(ns, "c", 1))
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			memberVolume(t, c, "c-0", true, nil)
			own := member.NewPod(c, "c-0", "3.6.16", "new", "")
			if err := controllerutil.SetControllerReference(c, own, k8s.Scheme()); err != nil {
				t.Fatal(err)
			}
			own.Spec.NodeName = "node-a" // scheduled: its deletion waits for a kubelet
			stranger := member.NewPod(c, "c-7", "3.6.16", "new", "")
			stranger.Spec.NodeName = "node-a"
			for _, p := range []*corev1.Pod{own, stranger} {
				if err := k8s.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			r1 := replacingRestore(t, ns, "r1")
			updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
				c.Annotations = map[string]string{etcdv1beta2.AnnotationReplacedBy: r1, etcdv1beta2.AnnotationReplacedByName: "r1"}
			})
			stopped := func() error {
				p := &corev1.Pod{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(own), p); err != nil {
					return err
				}
				if p.UID != own.UID || p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
					return fmt.Errorf("member pod %s deletion %v grace %v", p.UID, p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
				}
				if pvc, err := getVolume(t, ns, "c-0"); err != nil || metav1.GetControllerOf(pvc) != nil || pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != r1 {
					return fmt.Errorf("volume not retained for r1: %w", err)
				}
				s := &corev1.Pod{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(stranger), s); err != nil || s.DeletionTimestamp != nil {
					return fmt.Errorf("the stranger's pod was touched: %w", err)
				}
				cur := getCluster(t, ns, "c")
				if cur.DeletionTimestamp != nil {
					return errors.New("the cluster is being deleted")
				}
				if got := condition(cur, etcdv1beta2.ClusterConditionAvailable); got != "False/"+etcdv1beta2.ReasonReplacedInPlace {
					return fmt.Errorf("Available %s while its members are stopped", got)
				}
				if meta.IsStatusConditionTrue(cur.Status.Conditions, "Ready") {
					return errors.New("Ready while its members are stopped")
				}
				return nil
			}
			testutil.Eventually(t, testutil.Timeout, "members stopped before the cluster's deletion", testutil.NoError(stopped))
			testutil.Consistently(t, 3*time.Second, "held: stopped, nothing made again", testutil.NoError(stopped))

			rs := &etcdv1beta2.EtcdRestore{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1"}, rs); err != nil {
				t.Fatal(err)
			}
			if cancel == "deleted" {
				if err := k8s.Delete(ctx, rs); err != nil {
					t.Fatal(err)
				}
			} else {
				rs.Status.Phase = etcdv1beta2.RestorePhaseFailed
				if err := k8s.Status().Update(ctx, rs); err != nil {
					t.Fatal(err)
				}
			}
			testutil.Eventually(t, testutil.Timeout, "the volume given back and the marks gone", testutil.NoError(func() error {
				cur := getCluster(t, ns, "c")
				pvc, err := getVolume(t, ns, "c-0")
				if err != nil {
					return err
				}
				if !metav1.IsControlledBy(pvc, cur) || pvc.Annotations[etcdv1beta2.AnnotationRestoreUID] != "" || pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "" {
					return fmt.Errorf("volume owners %v annotations %v", pvc.OwnerReferences, pvc.Annotations)
				}
				if len(cur.Annotations) != 0 {
					return fmt.Errorf("cluster annotations %v", cur.Annotations)
				}
				return nil
			}))
		})
	}
}
