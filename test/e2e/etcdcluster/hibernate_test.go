//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestHibernateAndWake: a 3-member cluster on volumes, under a writer, is put to sleep
// (spec.hibernate): every member pod stops, the volumes (the same objects) stay, status says
// Hibernated. Woken, the same three members (member IDs, cluster ID) serve again on their data:
// every write the writer got acknowledged, before and after the sleep, is there.
func TestHibernateAndWake(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-hibernate")
	f.Create(t, onVolumes(newCluster(ns, "c", 3)))
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	writer := framework.StartWriter(cli, "/hibernate/")
	time.Sleep(2 * time.Second) // some writes before the sleep
	before := getCluster(t, f, ns, "c")
	ids := memberIDs(t, f, ns)
	volumes := map[string]types.UID{}
	for _, p := range memberPods(t, f, ns, "c") {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p.Name}, pvc); err != nil {
			t.Fatal(err)
		}
		volumes[p.Name] = pvc.UID
	}

	start := time.Now()
	setHibernate(t, f, ns, true)
	framework.Eventually(t, 3*time.Minute, "hibernated", func(ctx context.Context) (bool, error) {
		cur := getCluster(t, f, ns, "c")
		pods := memberPods(t, f, ns, "c")
		return len(pods) == 0 && cur.Status.Phase == etcdv1beta2.ClusterPhaseHibernated && condition(cur, etcdv1beta2.ClusterConditionHibernated) == "True/Hibernated",
			fmt.Errorf("%d pods, phase %s, Hibernated %s", len(pods), cur.Status.Phase, condition(cur, etcdv1beta2.ClusterConditionHibernated))
	})
	slept := time.Since(start)
	for name, uid := range volumes {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil || pvc.UID != uid || pvc.DeletionTimestamp != nil {
			t.Fatalf("volume %s while hibernating: %v, uid %s (was %s); want it kept", name, err, pvc.UID, uid)
		}
	}

	start = time.Now()
	setHibernate(t, f, ns, false)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	framework.Eventually(t, 3*time.Minute, "woken, Ready", func(ctx context.Context) (bool, error) {
		cur := getCluster(t, f, ns, "c")
		return condition(cur, "Ready") == "True/ClusterHealthy" && len(cur.Status.Members.Details) == 3, fmt.Errorf("Ready %s", condition(cur, "Ready"))
	})
	woke := time.Since(start)
	after := getCluster(t, f, ns, "c")
	if got := memberIDs(t, f, ns); !slices.Equal(got, ids) || after.Status.ClusterID != before.Status.ClusterID {
		t.Fatalf("woken with members %v of cluster %s; want %v of %s", got, after.Status.ClusterID, ids, before.Status.ClusterID)
	}
	time.Sleep(2 * time.Second) // some writes after the wake
	writer.Finish(t)            // it wrote before, tried during, and wrote after the sleep
	put(t, cli, "/after-wake", "ok")
	checkMembers(t, f, nil, "http", ns, "c", 3, "/after-wake", "ok")
	t.Logf("MEASURE hibernate (3 members on volumes): spec change -> every pod stopped %s; wake -> Ready %s",
		slept.Round(100*time.Millisecond), woke.Round(100*time.Millisecond))
}

func setHibernate(t testing.TB, f *framework.Framework, ns string, on bool) {
	t.Helper()
	framework.Eventually(t, time.Minute, fmt.Sprintf("spec.hibernate %t", on), func(ctx context.Context) (bool, error) {
		cur := getCluster(t, f, ns, "c")
		cur.Spec.Hibernate = on
		err := f.Client.Update(ctx, cur)
		return err == nil, err
	})
}
