//go:build e2e

package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// EtcdImage is the image the API defaults give a cluster of the given etcd version
// ("" = the default version): the tags hack/images.sh imports into the local cluster.
func EtcdImage(version string) string {
	return (&etcdv1beta2.ClusterSpec{Version: version}).Image()
}

// HeadlessService returns a headless Service that publishes not-ready addresses, the kind
// that gives pods with hostname+subdomain their per-pod DNS names.
func HeadlessService(ns, name string, selector map[string]string, ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 selector,
			PublishNotReadyAddresses: true,
		},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: fmt.Sprintf("p%d", p), Port: p, TargetPort: intstr.FromInt32(p),
		})
	}
	return svc
}

// Create creates obj and fails the test on error; the object goes with the test's namespace.
func (f *Framework) Create(t testing.TB, obj client.Object) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}
