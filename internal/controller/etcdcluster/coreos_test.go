package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// coreosPod is a member pod as coreos/etcd-operator v0.9.4 makes it (pkg/util/k8sutil
// newEtcdPod): named <cluster>-<random>, labels app, etcd_cluster and etcd_node, the cluster
// as its controller, restartPolicy Never, coreos' etcd flags and the etcd.version annotation.
func coreosPod(c *etcdv1beta2.EtcdCluster, name, version string) *corev1.Pod {
	host := fmt.Sprintf("%s.%s.%s.svc", name, c.Name, c.Namespace)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name,
			Labels:      map[string]string{"app": "etcd", "etcd_cluster": c.Name, "etcd_node": name},
			Annotations: map[string]string{"etcd.version": version},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
				Name: c.Name, UID: c.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Hostname: name, Subdomain: c.Name,
			Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v" + version, Command: []string{
				"/usr/local/bin/etcd", "--data-dir=/var/etcd/data", "--name=" + name,
				"--initial-advertise-peer-urls=http://" + host + ":2380", "--listen-peer-urls=http://0.0.0.0:2380",
				"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://" + host + ":2379",
				"--initial-cluster=" + name + "=http://" + host + ":2380", "--initial-cluster-state=new",
				"--initial-cluster-token=" + string(c.UID)}}},
		},
	}
}

// TestCoreosClusterIsLeftAlone (issue 32 item 1): an EtcdCluster whose member pods
// coreos/etcd-operator made (its operator swapped for this one while the cluster runs) is
// recognised on the first pass: no pod is created or deleted, no Service made, and Degraded
// says what was found (CoreosMembersFound). Before, the operator took the pods for members of
// its own: within two passes it had deleted two of the three coreos pods and started an
// "upgrade" of the cluster to its default etcd version.
func TestCoreosClusterIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "coreos")
	c := newCluster(ns, "c", 3)
	c.Spec.Paused = true // the coreos pods exist before this operator's first active pass
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, name := range []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"} {
		p := coreosPod(c, name, "3.5.35")
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		uids[name] = string(p.UID)
	}
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false })

	waitDegraded(t, ns, "c", etcdv1beta2.ReasonCoreosMembersFound, "c-4bxk7m2q9z, c-8hj2lqwx5r, c-zz7c2m4n6p were made by coreos/etcd-operator")
	testutil.Eventually(t, testutil.Timeout, "one Warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonCoreosMembersFound, 1)
	}))
	anotherPass(t, ns)
	if got := podNames(t, ns); !slices.Equal(got, []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}) {
		t.Fatalf("pods %v, want the coreos pods only", got)
	}
	for name, uid := range uids {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil || string(p.UID) != uid || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s changed: %v %v", name, err, p.DeletionTimestamp)
		}
	}
	svcs := &corev1.ServiceList{}
	if err := k8s.List(ctx, svcs, client.InNamespace(ns)); err != nil || len(svcs.Items) != 0 {
		t.Fatalf("Services made: %d (%v)", len(svcs.Items), err)
	}
}
