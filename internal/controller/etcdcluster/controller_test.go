package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// In "nokubelet-" namespaces pods stay Pending, as in plain envtest.
func TestCreatesServicesAndSeed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-create")
	c := newCluster(ns, "c", 3)
	c.Spec.Pod = &etcdv1beta2.PodPolicy{Labels: map[string]string{"team": "a"}, AntiAffinity: true, ClusterDomain: "cluster.local"}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	peer, cl, pod := &corev1.Service{}, &corev1.Service{}, &corev1.Pod{}
	testutil.Eventually(t, testutil.Timeout, "services and seed pod", testutil.NoError(func() error {
		for name, obj := range map[string]client.Object{"c": peer, "c-client": cl, "c-0": pod} {
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
				return err
			}
		}
		return nil
	}))
	if peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses || len(peer.Spec.Ports) != 2 {
		t.Errorf("peer Service spec = %+v, want headless, publishNotReadyAddresses, ports 2379/2380", peer.Spec)
	}
	if cl.Spec.Ports[0].Port != 2379 || cl.Spec.Selector["etcd_cluster"] != "c" {
		t.Errorf("client Service spec = %+v", cl.Spec)
	}
	for _, obj := range []metav1.Object{peer, cl, pod} {
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.Name != "c" {
			t.Errorf("%s has no controller reference to the cluster", obj.GetName())
		}
	}
	cur := getCluster(t, ns, "c")
	cmd := strings.Join(pod.Spec.Containers[0].Command, " ")
	for _, want := range []string{
		"--initial-cluster-state=new", "--initial-cluster-token=" + string(cur.UID), "--name=c-0",
		"--initial-cluster=c-0=http://c-0.c." + ns + ".svc.cluster.local:2380",
		"--advertise-client-urls=http://c-0.c." + ns + ".svc.cluster.local:2379",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("seed command %q lacks %q", cmd, want)
		}
	}
	if pod.Spec.Hostname != "c-0" || pod.Spec.Subdomain != "c" || pod.Labels["team"] != "a" || pod.Labels["etcd_member"] != "c-0" {
		t.Errorf("seed pod identity: hostname %q subdomain %q labels %v", pod.Spec.Hostname, pod.Spec.Subdomain, pod.Labels)
	}
	if img := pod.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.6.16" || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s pull %s", img, pod.Spec.Containers[0].ImagePullPolicy)
	}
	if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("antiAffinity=true: affinity = %+v", a)
	}
	testutil.Eventually(t, testutil.Timeout, "status while creating", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if c.Status.Phase != etcdv1beta2.ClusterPhaseCreating || condition(c, "Available") != "False/EtcdUnreachable" ||
			condition(c, "Scaling") != "True/CreatingSeed" || c.Status.Selector != "app=etcd,etcd_cluster=c" || c.Status.ServiceName != "c-client" {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nil
	}))
	if got := podNames(t, ns); !slices.Equal(got, []string{"c-0"}) {
		t.Errorf("pods = %v, want only the seed while it does not run", got)
	}
}

func TestPausedChangesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-paused")
	c := newCluster(ns, "c", 1)
	c.Spec.Paused = true
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "Paused condition", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Paused") != "True/PausedByUser" || c.Status.Phase != etcdv1beta2.ClusterPhasePaused || !c.Status.ControlPaused {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nil
	}))
	if got := podNames(t, ns); len(got) != 0 {
		t.Fatalf("paused cluster got pods %v", got)
	}
	c = getCluster(t, ns, "c")
	c.Spec.Paused = false
	if err := k8s.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "seed after unpause", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-0"}) {
			return fmt.Errorf("pods = %v", got)
		}
		if c := getCluster(t, ns, "c"); condition(c, "Paused") != "False/AsExpected" {
			return fmt.Errorf("Paused = %s", condition(c, "Paused"))
		}
		return nil
	}))
}

// grown creates a cluster of size members in a namespace with the fake kubelet and waits
// until all are started voters.
func grown(t *testing.T, base string, size int32) (string, *fakeEtcd) {
	t.Helper()
	ns := namespace(t, base)
	if err := k8s.Create(context.Background(), newCluster(ns, "c", size)); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, int(size))
	return ns, f
}

func waitConverged(t *testing.T, ns string, f *fakeEtcd, size int) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "cluster converged", testutil.NoError(func() error {
		voters, all, pods := memberNames(f, true), memberNames(f, false), podNames(t, ns)
		c := getCluster(t, ns, "c")
		if len(voters) != size || !slices.Equal(all, pods) || condition(c, "Available") != "True/ClusterHealthy" ||
			int(c.Status.ReadyMembers) != size || condition(c, "Progressing") != "False/AsExpected" {
			return fmt.Errorf("voters %v members %v pods %v status %+v", voters, all, pods, c.Status)
		}
		return nil
	}))
}

func TestGrowsAndShrinksOneAtATime(t *testing.T) {
	ns, f := grown(t, "grow", 3)
	c := getCluster(t, ns, "c")
	if c.Status.Phase != etcdv1beta2.ClusterPhaseRunning || c.Status.Size != 3 || c.Status.ClusterID == "" || c.Status.CurrentVersion != "3.6.16" {
		t.Errorf("status = %+v", c.Status)
	}
	// Every member is described; the fake's leader is its first member, c-0.
	var roles []string
	for _, d := range c.Status.Members.Details {
		roles = append(roles, d.Name+"="+string(d.Role))
		if !d.Healthy || d.Version != "3.6.16" || d.DBSize == 0 || d.ID == "" || d.LastError != "" {
			t.Errorf("member details %+v", d)
		}
	}
	if got := strings.Join(roles, ","); got != "c-0=Leader,c-1=Follower,c-2=Follower" || c.Status.Leader != "c-0" {
		t.Errorf("roles %s, leader %q", got, c.Status.Leader)
	}
	if n := promtest.ToFloat64(membershipChanges.WithLabelValues(ns, "c", "AddMember")); n != 2 {
		t.Errorf("AddMember changes counted: %v, want 2", n)
	}
	if n := promtest.ToFloat64(membersGauge.WithLabelValues(ns, "c", "ready")); n != 3 {
		t.Errorf("ready members gauge: %v, want 3", n)
	}
	c.Spec.Size = 1
	if err := k8s.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, f, 1)
	if n := promtest.ToFloat64(membershipChanges.WithLabelValues(ns, "c", "RemoveMember")); n != 2 {
		t.Errorf("RemoveMember changes counted: %v, want 2", n)
	}
}

func TestFailpointAfterMemberAddConverges(t *testing.T) {
	ns, f := grown(t, "failpoint", 1)
	failAfterAdd.Store(true)
	hits := failpointHit.Load()
	c := getCluster(t, ns, "c")
	c.Spec.Size = 2
	if err := k8s.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, f, 2)
	if failpointHit.Load() != hits+1 {
		t.Fatalf("failpoint after-member-add was not reached")
	}
}

func TestDeadMemberReplaced(t *testing.T) {
	ns, f := grown(t, "dead", 3)
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-1"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "c-1 replaced", testutil.NoError(func() error {
		if got := memberNames(f, true); len(got) != 3 || slices.Contains(got, "c-1") {
			return fmt.Errorf("voters %v", got)
		}
		return nil
	}))
	waitConverged(t, ns, f, 3)
}

func TestQuorumLostDeletesNothing(t *testing.T) {
	ns, f := grown(t, "quorum", 3)
	f.kill("c-1", "c-2")
	testutil.Eventually(t, testutil.Timeout, "QuorumLost", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Degraded") != "True/QuorumLost" || condition(c, "Available") != "False/EtcdUnreachable" {
			return fmt.Errorf("Degraded %s Available %s", condition(c, "Degraded"), condition(c, "Available"))
		}
		return nil
	}))
	for _, name := range []string{"c-1", "c-2"} {
		if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, testutil.Timeout, "pods gone, nothing else changed", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-0"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	}))
	c := getCluster(t, ns, "c")
	if got := memberNames(f, false); len(got) != 3 || condition(c, "Degraded") != "True/QuorumLost" {
		t.Fatalf("after deleting the dead pods: members %v Degraded %s; want 3 members kept, QuorumLost", got, condition(c, "Degraded"))
	}
}

func TestAdoptsRestoreSeed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "adopt")
	c := newCluster(ns, "c", 2)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r", SeedMember: "c-restored"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "WaitingForSeed", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Progressing") != "True/WaitingForSeed" {
			return fmt.Errorf("Progressing %s", condition(c, "Progressing"))
		}
		return nil
	}))
	if got := podNames(t, ns); len(got) != 0 {
		t.Fatalf("operator made pods %v while waiting for the seed", got)
	}
	c = getCluster(t, ns, "c")
	seed := contractSeed(t, c, "c-restored", "3.6.16")
	if err := k8s.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 2)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(seed), seed); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(seed); ref == nil || ref.UID != c.UID || seed.DeletionTimestamp != nil {
		t.Fatalf("seed pod: controller %v, deletion %v; want the cluster's running member", ref, seed.DeletionTimestamp)
	}
}

// contractSeed is the seed pod the restore operator makes (ownership contract point 2):
// controlled by the cluster, labelled and annotated with the restore, no owner reference to
// the EtcdRestore.
func contractSeed(t *testing.T, c *etcdv1beta2.EtcdCluster, name, version string) *corev1.Pod {
	t.Helper()
	seed := member.NewPod(c, name, version, "new", name+"="+member.PeerURL(c, name))
	seed.Labels["etcd.database.coreos.com/restore"] = "r"
	seed.Annotations["etcd.database.coreos.com/restore-uid"] = "restore-uid"
	if err := controllerutil.SetControllerReference(c, seed, k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	return seed
}

// TestUnsupportedUpgradeChangesNothing: the restore operator's seed runs 3.6 while the spec
// asks for 3.5.21 (a downgrade below etcd's 3.5.26 floor, which admission cannot see):
// Upgrading=False UnsupportedUpgrade, and the members the operator adds keep running the
// seed's 3.6.
func TestUnsupportedUpgradeChangesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "downgrade")
	c := newCluster(ns, "c", 2)
	c.Spec.Version = "3.5.21"
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r", SeedMember: "c-seed"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = getCluster(t, ns, "c")
	if err := k8s.Create(ctx, contractSeed(t, c, "c-seed", "3.6.16")); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, fakeFor(clusterConfig(ns)), 2)
	c = getCluster(t, ns, "c")
	if condition(c, "Upgrading") != "False/UnsupportedUpgrade" {
		t.Errorf("Upgrading = %s, want False/UnsupportedUpgrade", condition(c, "Upgrading"))
	}
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v3.6.16" {
			t.Errorf("pod %s runs %s, want the running 3.6.16", p.Name, img)
		}
	}
}

// TestFailedRestoreSaysHowToRetry: a cluster whose seeding EtcdRestore failed says so, with the
// restore's reason and how to retry, instead of waiting for a seed that never comes.
func TestFailedRestoreSaysHowToRetry(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "restorefailed")
	c := newCluster(ns, "c", 3)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r", SeedMember: "c-0"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: etcdv1beta2.RestoreSpec{
		EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "c"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "b"}}}
	if err := k8s.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "WaitingForSeed", testutil.NoError(func() error {
		if got := condition(getCluster(t, ns, "c"), "Progressing"); got != "True/WaitingForSeed" {
			return fmt.Errorf("Progressing %s", got)
		}
		return nil
	}))
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: etcdv1beta2.RestoreConditionFailed, Status: metav1.ConditionTrue,
		Reason: etcdv1beta2.ReasonInsufficientStorage, Message: "the data volume is too small for the backup"})
	if err := k8s.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "Degraded RestoreFailed", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		d := meta.FindStatusCondition(c.Status.Conditions, "Degraded")
		if d == nil || d.Reason != etcdv1beta2.ReasonRestoreFailed || !strings.Contains(d.Message, "InsufficientStorage") || !strings.Contains(d.Message, "create a new EtcdRestore with etcdCluster.name c") {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	}))
	if got := podNames(t, ns); len(got) != 0 {
		t.Fatalf("operator made pods %v for a cluster whose restore failed", got)
	}
}
