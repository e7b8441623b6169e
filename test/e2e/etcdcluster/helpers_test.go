//go:build e2e

// Package etcdcluster holds the e2e tests of the EtcdCluster controller (issue 4), run against
// the local cluster with the operator deployed (hack/e2e.sh).
package etcdcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	oldVersion = "3.5.35"
	newVersion = "3.6.16"
)

func newCluster(ns, name string, size int32) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.ClusterSpec{Size: size, Version: newVersion}}
}

// onVolumes keeps c's member data on 64Mi PersistentVolumeClaims of the default class.
func onVolumes(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.EtcdCluster {
	c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
	}}
	return c
}

func getCluster(t testing.TB, f *framework.Framework, ns, name string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := &etcdv1beta2.EtcdCluster{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
		t.Fatalf("getting EtcdCluster %s/%s: %v", ns, name, err)
	}
	return c
}

func condition(c *etcdv1beta2.EtcdCluster, typ string) string {
	cond := meta.FindStatusCondition(c.Status.Conditions, typ)
	if cond == nil {
		return "<none>"
	}
	return string(cond.Status) + "/" + cond.Reason
}

// waitAvailable waits until the cluster is Available with size ready voting members, no
// unready ones, and status for the current generation; it returns how long that took.
func waitAvailable(t testing.TB, f *framework.Framework, ns, name string, size int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	framework.Eventually(t, timeout, fmt.Sprintf("%s/%s Available with %d members", ns, name, size), func(ctx context.Context) (bool, error) {
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		s := c.Status
		if condition(c, "Available") != "True/ClusterHealthy" || int(s.ReadyMembers) != size || int(s.Size) != size ||
			len(s.Members.Unready) != 0 || s.ObservedGeneration != c.Generation || condition(c, "Progressing") != "False/AsExpected" {
			return false, fmt.Errorf("status: phase=%s size=%d ready=%d unready=%v conditions=%v", s.Phase, s.Size, s.ReadyMembers, s.Members.Unready, conds(c))
		}
		return true, nil
	})
	return time.Since(start)
}

func conds(c *etcdv1beta2.EtcdCluster) []string {
	var out []string
	for _, cond := range c.Status.Conditions {
		out = append(out, cond.Type+"="+string(cond.Status)+"/"+cond.Reason)
	}
	return out
}

// etcdClient connects from the host to endpoints (DNS names through the cluster DNS).
func etcdClient(t testing.TB, f *framework.Framework, tlsCfg *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(f.DialTCP)},
	})
	if err != nil {
		t.Fatalf("etcd client for %v: %v", endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func clientEndpoint(ns, name string) string {
	return fmt.Sprintf("http://%s:2379", framework.ServiceDNSName(name+"-client", ns))
}

func memberEndpoint(ns, cluster, pod string) string {
	return fmt.Sprintf("http://%s:2379", framework.PodDNSName(pod, cluster, ns))
}

// members lists the member pods of a cluster by name.
func memberPods(t testing.TB, f *framework.Framework, ns, name string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := f.Client.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app": "etcd", "etcd_cluster": name}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return pods.Items
}

// checkMembers asserts that etcd's member list holds exactly the member pods, all started
// voting members, and that key k reads want through every member.
func checkMembers(t testing.TB, f *framework.Framework, tlsCfg *tls.Config, scheme, ns, name string, size int, k, want string) {
	t.Helper()
	pods := memberPods(t, f, ns, name)
	var names, eps []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
			eps = append(eps, fmt.Sprintf("%s://%s:2379", scheme, framework.PodDNSName(p.Name, name, ns)))
		}
	}
	cli := etcdClient(t, f, tlsCfg, eps...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	var got []string
	for _, m := range ml.Members {
		if m.IsLearner || m.Name == "" {
			t.Errorf("member %x (%s) is not a started voting member", m.ID, m.Name)
		}
		got = append(got, m.Name)
	}
	slices.Sort(got)
	if len(got) != size || !slices.Equal(got, names) {
		t.Fatalf("etcd members %v, pods %v, want %d and equal (no stray member or pod)", got, names, size)
	}
	for _, ep := range eps {
		if k == "" {
			break
		}
		one := etcdClient(t, f, tlsCfg, ep)
		resp, err := one.Get(ctx, k)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
			t.Fatalf("reading %s through %s: %v %v, want %q", k, ep, resp, err, want)
		}
	}
}

func put(t testing.TB, cli *clientv3.Client, k, v string) {
	t.Helper()
	framework.Eventually(t, time.Minute, "put "+k, func(ctx context.Context) (bool, error) {
		_, err := cli.Put(ctx, k, v)
		return err == nil, err
	})
}

func deletePods(t testing.TB, f *framework.Framework, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := f.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
			t.Fatalf("deleting pod %s: %v", n, err)
		}
	}
}

// moveTo sets spec.version of cluster c in ns and waits until every member pod runs it and the
// cluster reports it, Ready, with every member reading the data.
func moveTo(t *testing.T, f *framework.Framework, ns, version string) {
	t.Helper()
	c := getCluster(t, f, ns, "c")
	before := c.DeepCopy()
	c.Spec.Version = version
	if err := f.Client.Patch(context.Background(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	framework.Eventually(t, 8*time.Minute, "every member on "+version, func(ctx context.Context) (bool, error) {
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, c); err != nil {
			return false, err
		}
		for _, p := range memberPods(t, f, ns, "c") {
			if p.Spec.Containers[0].Image != framework.EtcdImage(version) {
				return false, nil
			}
		}
		return c.Status.CurrentVersion == version && c.Status.ReadyMembers == 3 && condition(c, "Upgrading") == "False/AsExpected", nil
	})
	t.Logf("MEASURE %s -> %s (3 members): %s", before.Spec.Version, version, time.Since(start).Round(100*time.Millisecond))
	waitAvailable(t, f, ns, "c", 3, 2*time.Minute)
	checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")
}
