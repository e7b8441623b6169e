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

// SingleEtcdPod returns a pod running a one-member etcd cluster of the default version on an
// emptyDir, reachable at advertise; with hostname+subdomain it gets a per-pod DNS name.
func SingleEtcdPod(ns, name, subdomain string, labels map[string]string, advertise string) *corev1.Pod {
	peer := "http://127.0.0.1:2380"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			Hostname:  name,
			Subdomain: subdomain,
			Containers: []corev1.Container{{
				Name: "etcd", Image: EtcdImage(""), ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{
					"/usr/local/bin/etcd", "--name", name, "--data-dir", "/var/lib/etcd/data",
					"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", advertise,
					"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
					"--initial-cluster", name + "=" + peer,
				},
				Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}},
					PeriodSeconds: 2,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}
