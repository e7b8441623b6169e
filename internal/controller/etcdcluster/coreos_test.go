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
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
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
	// The held pass's status stands for itself: nothing left of the paused pass before it.
	testutil.Eventually(t, testutil.Timeout, "the held status", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		got := []string{condition(c, "Paused"), condition(c, "Available"), condition(c, "Scaling"), condition(c, "Progressing")}
		if want := []string{"False/AsExpected", "Unknown/CoreosMembersFound", "False/CoreosMembersFound", "False/CoreosMembersFound"}; !slices.Equal(got, want) {
			return fmt.Errorf("Paused, Available, Scaling, Progressing: %v, want %v", got, want)
		}
		return nil
	}))
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

// coreosCluster makes a paused cluster c and, in the namespace's fake etcd, the running members
// of coreos pods names (created too, with etcd version), the first one leading.
func coreosCluster(t *testing.T, ns string, names []string, version string, change func(c *etcdv1beta2.EtcdCluster)) *etcdv1beta2.EtcdCluster {
	t.Helper()
	c := newCluster(ns, "c", 3)
	c.Spec.Paused = true // the coreos pods exist before this operator's first active pass
	if change != nil {
		change(c)
	}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	f := newFakeEtcd()
	for i, name := range names {
		f.members = append(f.members, cluster.Member{ID: uint64(11 + i), Name: name,
			PeerURLs: []string{"http://" + name + ".c." + ns + ".svc:2380"}, ClientURLs: []string{advertisedURL(name)}})
	}
	fakes.Store(ns, f)
	for _, name := range names {
		if err := k8s.Create(context.Background(), coreosPod(c, name, version)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestCoreosClusterTakenOver (issue 32 item 2): with the takeover annotation, a running coreos
// cluster of three members is replaced in place by members c-0, c-1 and c-2 of this operator's
// own: each added as a learner of the running cluster and promoted before a coreos member is
// removed, never more than four members, leadership moved off the last coreos member before
// it goes, every coreos pod deleted with its member, and the cluster ID kept.
func TestCoreosClusterTakenOver(t *testing.T) {
	ns := namespace(t, "coreos-takeover")
	coreos := []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}
	coreosCluster(t, ns, coreos, "3.6.16", nil)
	f, _ := fakes.Load(ns)
	fake := f.(*fakeEtcd)
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Paused = false
		c.Annotations = map[string]string{etcdv1beta2.AnnotationTakeOver: "true"}
	})
	most := 0
	testutil.Eventually(t, 2*testutil.Timeout, "members c-0, c-1, c-2 only", testutil.NoError(func() error {
		var names []string
		for _, m := range fake.list() {
			names = append(names, m.PodName())
		}
		most = max(most, len(names))
		slices.Sort(names)
		want := []string{"c-0", "c-1", "c-2"}
		if c := getCluster(t, ns, "c"); !slices.Equal(names, want) || !slices.Equal(podNames(t, ns), want) || condition(c, "Available") != "True/ClusterHealthy" {
			return fmt.Errorf("members %v, pods %v, Available %s", names, podNames(t, ns), condition(getCluster(t, ns, "c"), "Available"))
		}
		return nil
	}))
	if most > 4 {
		t.Errorf("%d members at once, want at most 4", most)
	}
	fake.mu.Lock()
	moves := slices.Clone(fake.leaderMoves)
	fake.mu.Unlock()
	if len(moves) != 1 || moves[0] < 100 {
		t.Errorf("leadership moved to %v, want once, to a member of this operator's own (IDs from 101)", moves)
	}
	if c := getCluster(t, ns, "c"); c.Status.ClusterID != "c1" || condition(c, "Degraded") == "True/CoreosMembersFound" {
		t.Errorf("clusterID %q, Degraded %s", c.Status.ClusterID, condition(c, "Degraded"))
	}
}

// TestCoreosTakeOverRefused: the takeover annotation on a coreos cluster this operator cannot
// take over is refused with a reason that says why, and nothing of the cluster changes.
func TestCoreosTakeOverRefused(t *testing.T) {
	for _, tc := range []struct {
		name, version, msg string
		change             func(c *etcdv1beta2.EtcdCluster)
		pod                func(p *corev1.Pod)
	}{
		{name: "etcd 3.4", version: "3.4.27", msg: "runs etcd 3.4.27, and only clusters on etcd 3.5 or newer are taken over"},
		{name: "another minor", version: "3.5.35", msg: "runs etcd 3.5.35 and spec.version asks for 3.6.16"},
		{name: "tls", version: "3.6.16", msg: "spec.TLS is set", change: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
		}},
		{name: "cluster domain", version: "3.6.16", msg: "advertises peer URL", change: func(c *etcdv1beta2.EtcdCluster) {
			c.Spec.Pod = &etcdv1beta2.PodPolicy{ClusterDomain: "cluster.local"}
		}},
		{name: "volumes", version: "3.6.16", msg: "keeps its data on volume claim c-4bxk7m2q9z-pvc", pod: func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "etcd-data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.Name + "-pvc"}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "coreos-refused")
			coreos := []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}
			c := newCluster(ns, "c", 3)
			c.Spec.Paused = true
			c.Annotations = map[string]string{etcdv1beta2.AnnotationTakeOver: "true"}
			if tc.change != nil {
				tc.change(c)
			}
			if err := k8s.Create(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			uids := map[string]string{}
			for _, name := range coreos {
				p := coreosPod(c, name, tc.version)
				if tc.pod != nil {
					tc.pod(p)
				}
				if err := k8s.Create(context.Background(), p); err != nil {
					t.Fatal(err)
				}
				uids[name] = string(p.UID)
			}
			updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Paused = false })
			waitDegraded(t, ns, "c", etcdv1beta2.ReasonTakeOverRefused, tc.msg)
			anotherPass(t, ns)
			if got := podNames(t, ns); !slices.Equal(got, coreos) {
				t.Fatalf("pods %v, want the coreos pods only", got)
			}
			for name, uid := range uids {
				p := &corev1.Pod{}
				if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil || string(p.UID) != uid || p.DeletionTimestamp != nil {
					t.Fatalf("pod %s changed: %v", name, err)
				}
			}
		})
	}
}

// TestCoreosPeerURL reads the peer URL from coreos' own command form: one shell string.
func TestCoreosPeerURL(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Command: []string{"/bin/sh", "-ec",
		"/usr/local/bin/etcd --data-dir=/var/etcd/data --name=c-abc --initial-advertise-peer-urls=http://c-abc.c.ns.svc:2380 --listen-peer-urls=http://0.0.0.0:2380"}}}}}
	if got := coreosPeerURL(p); got != "http://c-abc.c.ns.svc:2380" {
		t.Fatalf("peer URL %q", got)
	}
}

// TestDropCoreosConditions: the conditions coreos wrote (reasons with spaces) go, this
// operator's stay.
func TestDropCoreosConditions(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{Status: etcdv1beta2.ClusterStatus{Conditions: []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "Cluster available"},
		{Type: "Scaling", Status: metav1.ConditionFalse, Reason: "Scaling up 2 -> 3"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: etcdv1beta2.ReasonCoreosMembersFound},
	}}}
	dropCoreosConditions(c)
	if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != "Degraded" {
		t.Fatalf("conditions %+v", c.Status.Conditions)
	}
}
