package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// ownExtraMember creates a pod and volume c-9 controlled by the cluster that is no member:
// the planner wants to delete both.
func ownExtraMember(t *testing.T, ns string) {
	t.Helper()
	c := getCluster(t, ns, "c")
	pvc := member.NewPVC(c, "c-9")
	pod := member.NewPod(c, "c-9", "3.6.16", "existing", "")
	for _, obj := range []client.Object{pvc, pod} {
		if err := controllerutil.SetControllerReference(c, obj, k8s.Scheme()); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(t *testing.T, ns, name string) error {
	t.Helper()
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}} {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		if obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%T %s is being deleted", obj, name)
		}
	}
	return nil
}

// TestSerializableListChangesNothing: while etcd answers only with a member's own
// (serializable) view, a pod and volume without member are not deleted and no member is
// removed on scale-down; once the list is linearizable again, both steps happen.
func TestSerializableListChangesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "serializable")
	if err := k8s.Create(ctx, withPVC(newCluster(ns, "c", 3))); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	f.set(func(f *fakeEtcd) { f.serializable = true })
	ownExtraMember(t, ns)
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 2 })
	testutil.Eventually(t, testutil.Timeout, "Degraded MembershipUnverified", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Degraded") != "True/MembershipUnverified" {
			return fmt.Errorf("Degraded %s", condition(c, "Degraded"))
		}
		return nil
	}))
	testutil.Consistently(t, 3*time.Second, "nothing deleted or removed", testutil.NoError(func() error {
		if got := memberNames(f, true); len(got) != 3 {
			return fmt.Errorf("voters %v", got)
		}
		return exists(t, ns, "c-9")
	}))
	if err := warningEvents(ns, "MembershipUnverified", 1); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeEtcd) { f.serializable = false })
	testutil.Eventually(t, testutil.Timeout, "extra pod and volume deleted, one member removed", testutil.NoError(func() error {
		if err := exists(t, ns, "c-9"); err == nil {
			return fmt.Errorf("c-9 still there")
		}
		if got := memberNames(f, true); len(got) != 2 {
			return fmt.Errorf("voters %v", got)
		}
		return nil
	}))
}

// TestClusterIDMismatchChangesNothing: members that answer with another cluster ID than the
// recorded one are not acted on: a member whose pod is gone is not removed.
func TestClusterIDMismatchChangesNothing(t *testing.T) {
	ctx := context.Background()
	ns, f := grown(t, "clusterid", 3)
	recorded := getCluster(t, ns, "c").Status.ClusterID
	f.set(func(f *fakeEtcd) { f.clusterID = 0xbad })
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-1"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "Degraded ClusterIDMismatch", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Degraded") != "True/ClusterIDMismatch" || condition(c, "Available") != "False/ClusterIDMismatch" {
			return fmt.Errorf("Degraded %s Available %s", condition(c, "Degraded"), condition(c, "Available"))
		}
		return nil
	}))
	anotherPass(t, ns)
	if got := memberNames(f, true); !slices.Contains(got, "c-1") || len(got) != 3 {
		t.Fatalf("voters %v, want c-1 kept", got)
	}
	if c := getCluster(t, ns, "c"); c.Status.ClusterID != recorded {
		t.Fatalf("status.clusterID %s, want %s kept", c.Status.ClusterID, recorded)
	}
	if err := warningEvents(ns, "ClusterIDMismatch", 1); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeEtcd) { f.clusterID = 0xc1 })
	testutil.Eventually(t, testutil.Timeout, "c-1 replaced once the ID matches", testutil.NoError(func() error {
		if got := memberNames(f, true); len(got) != 3 || slices.Contains(got, "c-1") {
			return fmt.Errorf("voters %v", got)
		}
		return nil
	}))
}

// TestDialsOnlyOwnURLsAndChecksWhoAnswers: the operator never dials the client URLs members
// advertise, and a member whose URL is answered by another member counts as down.
func TestDialsOnlyOwnURLsAndChecksWhoAnswers(t *testing.T) {
	ns, f := grown(t, "dial", 3)
	for _, u := range f.dialedURLs() {
		if !strings.HasSuffix(u, ".c."+ns+".svc:2379") || strings.Contains(u, "advertised") {
			t.Errorf("dialed %s, not a URL computed for a member pod", u)
		}
	}
	f.set(func(f *fakeEtcd) { f.impostor["c-2"] = 4242 })
	// Nothing tells the operator (the impostor's pod stays Ready): a pass of its own, not its
	// steady re-check a minute later, which a loaded machine can push past the wait.
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "c-2 counted as down", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if !slices.Contains(c.Status.Members.Unready, "c-2") || condition(c, "Degraded") != "True/MemberUnhealthy" {
			return fmt.Errorf("members %+v Degraded %s", c.Status.Members, condition(c, "Degraded"))
		}
		return nil
	}))
	if got := memberNames(f, true); len(got) != 3 {
		t.Fatalf("voters %v, want 3 (a running member that does not answer is waited for)", got)
	}
}

// TestUnstartedEtcdNotDialed: a member pod that runs while its etcd container has not started
// (startup probe not passed) is not dialed: a pass would wait out the dial timeout on it and
// learn nothing. The cluster waits, saying etcd does not answer, and forms once the kubelet
// reports the container started.
func TestUnstartedEtcdNotDialed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nostart-dial")
	if err := k8s.Create(ctx, newCluster(ns, "c", 1)); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	testutil.Eventually(t, testutil.Timeout, "seed pod running", testutil.NoError(func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c-0"}, pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil
	}))
	anotherPass(t, ns)
	f := fakeFor(clusterConfig(ns))
	if dialed := f.dialedURLs(); len(dialed) != 0 {
		t.Fatalf("dialed %v before etcd started", dialed)
	}
	if c := getCluster(t, ns, "c"); condition(c, "Available") != "False/EtcdUnreachable" || c.Status.ClusterID != "" {
		t.Fatalf("Available %s, cluster ID %q: want EtcdUnreachable and no cluster", condition(c, "Available"), c.Status.ClusterID)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.ContainerName, Image: pod.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true)}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, f, 1)
	if dialed := f.dialedURLs(); !slices.Contains(dialed, "http://c-0.c."+ns+".svc:2379") {
		t.Fatalf("dialed %v, want c-0 once started", dialed)
	}
}
