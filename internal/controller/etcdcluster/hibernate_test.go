package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestHibernateAndWake: spec.hibernate stops every member pod of a cluster on volumes and
// keeps its volumes (the same objects), its Services, its member list and cluster ID; status
// says Hibernated (phase, condition, Ready False as Idle) and nothing else is changed while it
// sleeps. Waking brings the same members back on the same volumes.
func TestHibernateAndWake(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "hibernate")
	if err := k8s.Create(ctx, withPVC(newCluster(ns, "c", 3))); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	volumes := map[string]types.UID{}
	for _, name := range []string{"c-0", "c-1", "c-2"} {
		volumes[name] = uidOf(t, ns, name, &corev1.PersistentVolumeClaim{})
	}
	members, clusterID := memberIDsOf(f), getCluster(t, ns, "c").Status.ClusterID

	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Hibernate = true })
	testutil.Eventually(t, testutil.Timeout, "hibernated", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if pods := podNames(t, ns); len(pods) != 0 || c.Status.Phase != etcdv1beta2.ClusterPhaseHibernated ||
			condition(c, etcdv1beta2.ClusterConditionHibernated) != "True/Hibernated" || condition(c, "Ready") != "False/Hibernated" {
			return fmt.Errorf("pods %v, phase %s, conditions %v", pods, c.Status.Phase, c.Status.Conditions)
		}
		return nil
	}))
	for name, uid := range volumes {
		if got := uidOf(t, ns, name, &corev1.PersistentVolumeClaim{}); got != uid {
			t.Fatalf("volume %s replaced while hibernating: uid %s, was %s", name, got, uid)
		}
	}
	for _, svc := range []string{"c", "c-client"} {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc}, &corev1.Service{}); err != nil {
			t.Fatalf("service %s while hibernating: %v", svc, err)
		}
	}
	if got := memberIDsOf(f); !slices.Equal(got, members) {
		t.Fatalf("member list changed while hibernating: %v, was %v", got, members)
	}

	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Hibernate = false })
	waitConverged(t, ns, f, 3)
	c := getCluster(t, ns, "c")
	if got := podNames(t, ns); !slices.Equal(got, []string{"c-0", "c-1", "c-2"}) || c.Status.ClusterID != clusterID ||
		condition(c, etcdv1beta2.ClusterConditionHibernated) != "False/Awake" || !slices.Equal(memberIDsOf(f), members) {
		t.Fatalf("woken: pods %v, cluster ID %s (was %s), Hibernated %s, members %v (were %v)", got, c.Status.ClusterID, clusterID,
			condition(c, etcdv1beta2.ClusterConditionHibernated), memberIDsOf(f), members)
	}
	for name, uid := range volumes {
		if got := uidOf(t, ns, name, &corev1.PersistentVolumeClaim{}); got != uid {
			t.Fatalf("volume %s replaced by the wake: uid %s, was %s", name, got, uid)
		}
	}
}

// memberIDsOf lists "<name>=<id>" of the fake's members.
func memberIDsOf(f *fakeEtcd) []string {
	var out []string
	for _, m := range f.list() {
		out = append(out, fmt.Sprintf("%s=%x", m.Name, m.ID))
	}
	slices.Sort(out)
	return out
}
