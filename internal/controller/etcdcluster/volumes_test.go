package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// pvcCluster creates a 3-member PVC cluster whose claims use a StorageClass that allows
// expansion or not, waits until it converged, and marks its claims Bound at 1Gi (envtest has
// no volume controller).
func pvcCluster(t *testing.T, base string, expandable bool) (string, *fakeEtcd) {
	t.Helper()
	ns := namespace(t, base)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns}, Provisioner: "example.com/test", AllowVolumeExpansion: &expandable}
	if err := k8s.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	c := withPVC(newCluster(ns, "c", 3))
	c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName = &sc.Name
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	for _, name := range []string{"c-0", "c-1", "c-2"} {
		setCapacity(t, ns, name, "1Gi")
	}
	return ns, f
}

// setCapacity plays the volume controller: the claim is Bound with that capacity.
func setCapacity(t *testing.T, ns, name, capacity string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	if err := k8s.Status().Update(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}

// requests lists the claims' storage requests in name order ("c-0=2Gi c-1=1Gi ...").
func requests(t *testing.T, ns string) string {
	t.Helper()
	var out []string
	for _, name := range []string{"c-0", "c-1", "c-2"} {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
			t.Fatal(err)
		}
		q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		out = append(out, name+"="+q.String())
	}
	return strings.Join(out, " ")
}

func growSpec(t *testing.T, ns, size string) {
	t.Helper()
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Pod.PersistentVolumeClaimSpec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
	})
}

// TestVolumesGrowOneAtATime (issue 18 item 2): raising the spec's storage request grows one
// member's claim at a time: the next only after the previous reports the new capacity.
func TestVolumesGrowOneAtATime(t *testing.T) {
	ns, _ := pvcCluster(t, "grow-volumes", true)
	growSpec(t, ns, "2Gi")
	for i, want := range []string{"c-0=2Gi c-1=1Gi c-2=1Gi", "c-0=2Gi c-1=2Gi c-2=1Gi", "c-0=2Gi c-1=2Gi c-2=2Gi"} {
		testutil.Eventually(t, testutil.Timeout, want, testutil.NoError(func() error {
			if got := requests(t, ns); got != want {
				return fmt.Errorf("requests %s", got)
			}
			c := getCluster(t, ns, "c")
			if !strings.HasPrefix(condition(c, "Progressing"), "True/") {
				return fmt.Errorf("Progressing %s while a volume grows", condition(c, "Progressing"))
			}
			return nil
		}))
		// Until this volume reports its new size, no other grows.
		testutil.Consistently(t, 3*time.Second, "one volume at a time", func() (bool, string) {
			got := requests(t, ns)
			return got == want, got
		})
		setCapacity(t, ns, fmt.Sprintf("c-%d", i), "2Gi")
	}
	testutil.Eventually(t, testutil.Timeout, "volumes as the spec asks", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, "Progressing") != "False/AsExpected" || condition(c, "Degraded") != "False/AsExpected" {
			return fmt.Errorf("Progressing %s Degraded %s", condition(c, "Progressing"), condition(c, "Degraded"))
		}
		return nil
	}))
}

// TestVolumeExpansionUnsupported: a StorageClass that does not allow expansion makes the
// cluster say so (Degraded VolumeExpansionUnsupported, one Warning, Ready Stalled); nothing
// is deleted or restarted to get there.
func TestVolumeExpansionUnsupported(t *testing.T) {
	ns, f := pvcCluster(t, "fixed-volumes", false)
	before, pods := memberNames(f, false), podNames(t, ns)
	growSpec(t, ns, "2Gi")
	testutil.Eventually(t, testutil.Timeout, "VolumeExpansionUnsupported", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonVolumeExpansionUnsupported {
			return fmt.Errorf("Degraded %s", condition(c, "Degraded"))
		}
		return warningEvents(ns, etcdv1beta2.ReasonVolumeExpansionUnsupported, 1)
	}))
	waitKstatus(t, ns, "Ready=False/VolumeExpansionUnsupported Reconciling=<none> Stalled=True/VolumeExpansionUnsupported")
	if got := requests(t, ns); got != "c-0=1Gi c-1=1Gi c-2=1Gi" {
		t.Fatalf("requests %s", got)
	}
	if after := memberNames(f, false); strings.Join(after, ",") != strings.Join(before, ",") || strings.Join(podNames(t, ns), ",") != strings.Join(pods, ",") {
		t.Fatalf("members or pods changed: %v %v", after, podNames(t, ns))
	}
}

// TestVolumeShrinkRefused: a smaller storage request changes no volume and says why.
func TestVolumeShrinkRefused(t *testing.T) {
	ns, _ := pvcCluster(t, "shrink-volumes", true)
	growSpec(t, ns, "512Mi")
	testutil.Eventually(t, testutil.Timeout, "InvalidSpec", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonInvalidSpec {
			return fmt.Errorf("Degraded %s", condition(c, "Degraded"))
		}
		return nil
	}))
	if got := requests(t, ns); got != "c-0=1Gi c-1=1Gi c-2=1Gi" {
		t.Fatalf("requests %s", got)
	}
}
