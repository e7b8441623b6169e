//go:build e2e

package safety

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestBackupCannotReachAnotherTenantsEtcd is issue 30's reproduction: tenant A runs an etcd
// holding /a/secret; tenant B names, in its own namespace, a Service that leads to it (an
// ExternalName alias of A's client Service, and a Service without a selector whose
// EndpointSlice B wrote with A's pod IP) and backs it up to B's own bucket. Both backups fail
// with EndpointNotAllowed and nothing is uploaded; B's backup of its own etcd through a Service
// of its namespace completes (the fence refuses only what leads elsewhere).
func TestBackupCannotReachAnotherTenantsEtcd(t *testing.T) {
	f, nsB, bucket := setup(t, "tenant-b")
	nsA := f.CreateNamespace(t, "tenant-a")
	sel := map[string]string{"app": "tenant-etcd"}
	start := func(ns string) *corev1.Pod {
		f.Create(t, framework.HeadlessService(ns, "db", sel, 2379))
		f.Create(t, framework.SingleEtcdPod(ns, "db-0", "db", sel, "http://"+framework.PodDNSName("db-0", "db", ns)+":2379"))
		return f.WaitForPodReady(t, ns, "db-0", 2*time.Minute)
	}
	podA := start(nsA)
	start(nsB)
	cli := f.EtcdClient(t, "http://"+framework.PodDNSName("db-0", "db", nsA)+":2379")
	if _, err := cli.Put(t.Context(), "/a/secret", "tenant A's"); err != nil {
		t.Fatal(err)
	}

	f.Create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "alias"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: framework.ServiceDNSName("db", nsA)}})
	f.Create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "handmade"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 2379}}}})
	f.Create(t, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: nsB, Name: "handmade-1", Labels: map[string]string{discoveryv1.LabelServiceName: "handmade"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podA.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](2379)}},
	})

	backup := func(name, host string) {
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: name},
			Spec: etcdv1beta2.BackupSpec{EtcdEndpoints: []string{"http://" + host + ":2379"},
				StorageType: bucket.Type, BackupSource: bucket.Source(name+"/etcd.backup", "creds")},
		})
	}
	for _, svc := range []string{"alias", "handmade"} {
		backup(svc, svc)
	}
	for _, svc := range []string{"alias", "handmade"} {
		b := &etcdv1beta2.EtcdBackup{}
		framework.Eventually(t, time.Minute, "EtcdBackup "+svc+" refused", func(ctx context.Context) (bool, error) {
			if err := f.Client.Get(ctx, types.NamespacedName{Namespace: nsB, Name: svc}, b); err != nil {
				return false, err
			}
			if b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
				t.Fatalf("EtcdBackup %s through Service %s completed: tenant A's keyspace is in tenant B's bucket (%s)", svc, svc, b.Status.Location)
			}
			return b.Status.Phase == etcdv1beta2.BackupPhaseFailed, fmt.Errorf("phase %q", b.Status.Phase)
		})
		if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1beta2.BackupConditionFailed); c == nil || c.Reason != etcdv1beta2.ReasonEndpointNotAllowed {
			t.Errorf("EtcdBackup %s: Failed condition %+v, want reason %s", svc, c, etcdv1beta2.ReasonEndpointNotAllowed)
		}
		if keys := bucket.Keys(t, svc+"/"); len(keys) > 0 {
			t.Errorf("EtcdBackup %s: the bucket holds %v", svc, keys)
		}
	}

	// B's own etcd, through its Service and through its pod's name.
	backup("own", "db")
	backup("own-pod", framework.PodDNSName("db-0", "db", nsB))
	for _, name := range []string{"own", "own-pod"} {
		f.WaitBackupCompleted(t, nsB, name, 2*time.Minute)
	}
}
