//go:build e2e

// Package e2e runs against a real cluster with the operators deployed: by default the local
// cluster (hack/e2e.sh brings it up, imports the images and deploys). Shared helpers live in
// test/e2e/framework.
package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestSmokeOperatorsAvailable: the three operator Deployments of manifests/deploy are Available.
func TestSmokeOperatorsAvailable(t *testing.T) {
	f := framework.Global(t)
	for _, d := range framework.OperatorDeployments {
		f.WaitForDeploymentAvailable(t, framework.OperatorNamespace, d, 2*time.Minute)
	}
}

// TestSmokeCRDsEstablished: the four CRDs are served.
func TestSmokeCRDsEstablished(t *testing.T) {
	f := framework.Global(t)
	for _, plural := range []string{"etcdclusters", "etcdbackups", "etcdrestores", "etcdbackupschedules"} {
		f.WaitForCRDEstablished(t, plural+".etcd.database.coreos.com", time.Minute)
	}
}

// TestSmokeEtcdPodByHeadlessServiceDNS: a pod of the local etcd image behind a headless Service
// starts and answers on its client port under its per-pod DNS name, from another pod (CoreDNS
// in pods), from the host (cluster DNS + routes), by exec and through a port-forward.
func TestSmokeEtcdPodByHeadlessServiceDNS(t *testing.T) {
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "smoke")
	const svcName, podName, port = "smoke", "etcd-0", int32(2379)
	labels := map[string]string{"app": "smoke-etcd"}
	endpoint := fmt.Sprintf("http://%s:%d", framework.PodDNSName(podName, svcName, ns), port)

	f.Create(t, framework.HeadlessService(ns, svcName, labels, port))
	f.Create(t, framework.SingleEtcdPod(ns, podName, svcName, labels, endpoint))
	f.WaitForPodReady(t, ns, podName, 2*time.Minute)

	// From another pod: the name resolves through the cluster DNS the kubelet gives pods.
	put := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcdctl-put"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyOnFailure, // retried until DNS and etcd answer
			Containers: []corev1.Container{{
				Name: "etcdctl", Image: framework.EtcdImage(""), ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"etcdctl", "--endpoints", endpoint, "--dial-timeout", "5s", "put", "smoke", "hello"},
			}},
		},
	}
	f.Create(t, put)
	f.WaitForPodSucceeded(t, ns, put.Name, 2*time.Minute)

	// From the host: resolve through the cluster DNS, dial the pod address.
	if got := getKey(t, endpoint, grpc.WithContextDialer(f.DialTCP)); got != "hello" {
		t.Fatalf("from the host via %s: got %q, want %q", endpoint, got, "hello")
	}

	// Exec into the pod.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, _, err := f.Exec(ctx, ns, podName, "", nil, "etcdctl", "--endpoints", endpoint, "get", "smoke", "--print-value-only")
	if err != nil || strings.TrimSpace(out) != "hello" {
		t.Fatalf("exec etcdctl get: out=%q err=%v", out, err)
	}

	// Through a port-forward, as a test against any cluster would reach it.
	local := f.PortForward(t, ns, "pod/"+podName, int(port))
	if got := getKey(t, "http://"+local); got != "hello" {
		t.Fatalf("via port-forward %s: got %q, want %q", local, got, "hello")
	}
}

// getKey reads key "smoke" from endpoint, retrying while the path settles.
func getKey(t *testing.T, endpoint string, opts ...grpc.DialOption) string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, DialOptions: opts})
	if err != nil {
		t.Fatalf("etcd client for %s: %v", endpoint, err)
	}
	defer cli.Close()
	var value string
	framework.Eventually(t, time.Minute, "get smoke from "+endpoint, func(ctx context.Context) (bool, error) {
		resp, err := cli.Get(ctx, "smoke")
		if err != nil {
			return false, err
		}
		if len(resp.Kvs) == 1 {
			value = string(resp.Kvs[0].Value)
		}
		return true, nil
	})
	return value
}
