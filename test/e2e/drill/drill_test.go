//go:build e2e

// Package drill runs a scheduled restore drill (EtcdBackupSchedule.spec.restoreDrill) for real:
// the deployed backup operator takes the backups and starts the drill, the restore operator
// restores it into a scratch cluster the etcd operator grows, verifies it and deletes it.
package drill

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	size   = 3
	keys   = 3000
	prefix = "/drill/"
	ttl    = 15 // seconds the scratch cluster is kept after the drill
	// rare is a cron expression that does not fire during the test.
	rare = "0 0 1 1 *"
)

// TestScheduledDrill: a 3-member EtcdCluster holds 3000 keys; an EtcdBackupSchedule backs it up
// to MinIO every minute with a restore drill every minute. The first drill, started by the
// backup operator on the newest successful backup, restores into a scratch cluster; the
// schedule then records it: status.lastDrill passed with a plausible time to restore and
// backup age and the 3000 keys, every member verified, DrillPassed True, a DrillPassed event.
// The scratch cluster is deleted after the 15 s TTL with its pods and volumes, and deleting the
// schedule deletes its drill EtcdRestore.
// (After the first drill starts both schedules are set to once a year, so no further backups or
// drills load the shared cluster.)
func TestScheduledDrill(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	ns := f.CreateNamespace(t, "drill")
	start := time.Now()

	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: size}})
	f.WaitClusterAvailable(t, ns, "db", size, 3*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, keys)
	if n := countAll(t, cli); n != keys {
		t.Fatalf("cluster db holds %d keys, want %d", n, keys)
	}
	t.Logf("cluster Available with %d keys at +%s", keys, time.Since(start).Round(time.Second))

	bucket.CreateSecret(t, f, ns, "aws")
	s := &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "*/1 * * * *",
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: bucket.Type,
				BackupSource: bucket.Source("db/etcd.backup", "aws"),
			}},
			RestoreDrill: &etcdv1beta2.RestoreDrillSpec{Schedule: "*/1 * * * *", TTLSecondsAfterFinished: ptr.To[int32](ttl), HistoryLimit: ptr.To[int32](1)},
		},
	}
	f.Create(t, s)

	// The first drill: due at the first minute, started once that minute's backup completed.
	var drill *etcdv1beta2.EtcdRestore
	framework.Eventually(t, 150*time.Second, "the first drill EtcdRestore", func(ctx context.Context) (bool, error) {
		list := &etcdv1beta2.EtcdRestoreList{}
		if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{etcdbackupschedule.DrillLabel: "db"}); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			drill = &list.Items[0]
			return true, nil
		}
		cur := &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, cur); err != nil {
			return false, err
		}
		return false, fmt.Errorf("no drill yet; lastSuccessfulBackup %q, nextDrillTime %v", cur.Status.LastSuccessfulBackup, cur.Status.NextDrillTime)
	})
	created := time.Now()
	t.Logf("drill %s created at +%s, restoring %s", drill.Name, created.Sub(start).Round(time.Second), drill.Spec.BackupRef.Name)
	if drill.Spec.EtcdCluster.Name != drill.Name || drill.Spec.ClusterTemplate == nil || drill.Spec.ClusterTemplate.Name != "db" {
		t.Fatalf("drill spec %+v", drill.Spec)
	}
	framework.Eventually(t, 30*time.Second, "both schedules set to once a year", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, cur); err != nil {
			return false, err
		}
		cur.Spec.Schedule, cur.Spec.RestoreDrill.Schedule = rare, rare
		return f.Client.Update(ctx, cur) == nil, nil
	})

	// The schedule records the drill's outcome.
	var got *etcdv1beta2.EtcdBackupSchedule
	framework.Eventually(t, 3*time.Minute, "status.lastDrill of "+drill.Name, func(ctx context.Context) (bool, error) {
		rs := &etcdv1beta2.EtcdRestore{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: drill.Name}, rs); err != nil {
			return false, err
		}
		if c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			t.Fatalf("drill %s failed: %s: %s", rs.Name, c.Reason, c.Message)
		}
		got = &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, got); err != nil {
			return false, err
		}
		ld := got.Status.LastDrill
		return ld != nil && ld.Restore == drill.Name, fmt.Errorf("restore phase %s; lastDrill %+v", rs.Status.Phase, ld)
	})
	ld := got.Status.LastDrill
	rto, age := ld.TimeToRestore, ld.BackupAge
	t.Logf("drill %s finished at +%s: passed %t, time to restore %s, backup age %s, %d keys, backup %s", ld.Restore,
		time.Since(start).Round(time.Second), ld.Passed, dur(rto), dur(age), ld.Keys, ld.Backup)
	if !ld.Passed || ld.Reason != "" {
		t.Fatalf("lastDrill did not pass: %+v", ld)
	}
	if rto == nil || rto.Duration <= 0 || rto.Duration > time.Since(created)+5*time.Second {
		t.Errorf("timeToRestore %v not within (0, %s]", rto, time.Since(created).Round(time.Second))
	}
	if age == nil || age.Duration < 0 || age.Duration > 3*time.Minute {
		t.Errorf("backupAge %v not within [0, 3m]", age)
	}
	if ld.Keys != keys {
		t.Errorf("lastDrill.keys %d, want the %d keys written", ld.Keys, keys)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed); c == nil || c.Status != metav1.ConditionTrue || c.Reason != etcdv1beta2.ReasonDrillPassed {
		t.Errorf("DrillPassed condition %+v", c)
	}
	if got.Status.LastDrillTime == nil || got.Status.NextDrillTime == nil {
		t.Errorf("lastDrillTime %v, nextDrillTime %v", got.Status.LastDrillTime, got.Status.NextDrillTime)
	}
	framework.Eventually(t, 30*time.Second, "a DrillPassed event on the schedule", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := f.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == etcdv1beta2.ReasonDrillPassed && e.InvolvedObject.Kind == "EtcdBackupSchedule" && e.Type == corev1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})

	rs := &etcdv1beta2.EtcdRestore{}
	if err := f.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: drill.Name}, rs); err != nil {
		t.Fatal(err)
	}
	if v := rs.Status.Verification; v == nil || v.MembersVerified != size || !v.Passed {
		t.Errorf("drill verification %+v, want %d members verified", v, size)
	}

	// The scratch cluster goes after the TTL; the template cluster keeps its keys.
	framework.Eventually(t, ttl*time.Second+90*time.Second, "scratch cluster "+drill.Name+" deleted after the TTL", func(ctx context.Context) (bool, error) {
		rs := &etcdv1beta2.EtcdRestore{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: drill.Name}, rs); err != nil {
			return false, err
		}
		_, err := f.GetCluster(ctx, ns, drill.Name)
		gone := client.IgnoreNotFound(err) == nil && err != nil
		return gone && rs.Status.ClusterDeletedTime != nil, fmt.Errorf("cluster get: %v; clusterDeletedTime %v", err, rs.Status.ClusterDeletedTime)
	})
	framework.Eventually(t, 90*time.Second, "the scratch cluster's pods and volumes gone", func(ctx context.Context) (bool, error) {
		sel := client.MatchingLabels{"etcd_cluster": drill.Name}
		pods, pvcs := &corev1.PodList{}, &corev1.PersistentVolumeClaimList{}
		if err := f.Client.List(ctx, pods, client.InNamespace(ns), sel); err != nil {
			return false, err
		}
		if err := f.Client.List(ctx, pvcs, client.InNamespace(ns), sel); err != nil {
			return false, err
		}
		return len(pods.Items)+len(pvcs.Items) == 0, fmt.Errorf("%d pods, %d volumes left", len(pods.Items), len(pvcs.Items))
	})
	t.Logf("scratch cluster deleted with its pods and volumes at +%s", time.Since(start).Round(time.Second))
	if n := countAll(t, cli); n != keys {
		t.Fatalf("template cluster db holds %d keys after the drill, want %d", n, keys)
	}

	// Deleting the schedule deletes its drills (owner reference).
	if err := f.Client.Delete(t.Context(), s, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, "drill EtcdRestore deleted with its schedule", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: drill.Name}, &etcdv1beta2.EtcdRestore{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Errorf("get: %v", err)
	})
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

// countAll counts every key in the keyspace: what the drill's verification counts.
func countAll(t testing.TB, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("counting keys: %v", err)
	}
	return resp.Count
}

func dur(d *metav1.Duration) string {
	if d == nil {
		return "unset"
	}
	return d.Duration.String()
}
