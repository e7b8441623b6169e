//go:build e2e

// Package drill runs, for real, the restores that schedules start by themselves: a scheduled
// restore drill (EtcdBackupSchedule.spec.restoreDrill: the deployed backup operator takes the
// backups and starts the drill, the restore operator restores it into a scratch cluster the etcd
// operator grows, verifies it and deletes it), and automatic recovery (EtcdCluster
// spec.recovery) from a schedule's newest backup. Their tests mostly wait for cron minutes, so
// hack/e2e.sh runs this package beside the CPU-bound ones.
package drill

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
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
// to MinIO every minute, compressed and encrypted (every object stored is an age file), with
// continuous capture, under a writer. The first drill, started by the backup operator on the
// newest successful backup, restores it into a scratch cluster and replays the capture onto it;
// the schedule then records it: status.lastDrill passed with a plausible time to restore and
// backup age, a recovery point of seconds, exactly the keys the source held at the revision
// replayed to, every member verified, DrillPassed True, a DrillPassed event.
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
	// The backups and segments are compressed and encrypted: the drill decrypts both.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "age-keys"}, StringData: map[string]string{etcdv1beta2.EncryptionIdentityKey: id.String()}})
	src := bucket.Source("db/etcd.backup", "aws")
	src.Encryption = &etcdv1beta2.BackupEncryption{SecretName: "age-keys"}
	// Writes go on from before the first backup until the drill has chosen its point: the
	// capture holds those after the backup, and the drill replays them.
	writer := framework.StartWriter(cli, prefix+"w/")
	defer writer.Stop()
	s := &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule: "*/1 * * * *",
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: bucket.Type,
				BackupSource: src, Compression: etcdv1beta2.CompressionZstd,
			}},
			// Once the capture holds revisions after the first backup, backups stop and the
			// drill is turned to every minute (below): it then makes up the missed minute at
			// once, on a backup the capture has gone past.
			RestoreDrill:      &etcdv1beta2.RestoreDrillSpec{Schedule: rare, TTLSecondsAfterFinished: ptr.To[int32](ttl), HistoryLimit: ptr.To[int32](1)},
			ContinuousCapture: &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To[int32](1)},
		},
	}
	f.Create(t, s)
	framework.Eventually(t, 150*time.Second, "the first backup and a capture past it", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, cur); err != nil {
			return false, err
		}
		c := cur.Status.Capture
		if cur.Status.LastSuccessfulBackup == "" || c == nil || c.Segments == 0 || c.CapturedRevision <= c.StartRevision {
			return false, fmt.Errorf("lastSuccessfulBackup %q, capture %+v", cur.Status.LastSuccessfulBackup, c)
		}
		// No further backups: a drill started in the second a backup completed would find
		// nothing captured after it yet.
		cur.Spec.Schedule = rare
		return f.Client.Update(ctx, cur) == nil, nil
	})
	framework.Eventually(t, 150*time.Second, "no backup running and a capture past the newest", func(ctx context.Context) (bool, error) {
		cur := &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, cur); err != nil {
			return false, err
		}
		newest := &etcdv1beta2.EtcdBackup{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: cur.Status.LastSuccessfulBackup}, newest); err != nil {
			return false, err
		}
		c := cur.Status.Capture
		if len(cur.Status.Active) > 0 || c == nil || c.CapturedRevision <= newest.Status.EtcdRevision {
			return false, fmt.Errorf("active %v, newest backup %s at revision %d, capture %+v", cur.Status.Active, newest.Name, newest.Status.EtcdRevision, c)
		}
		cur.Spec.RestoreDrill.Schedule = "*/1 * * * *"
		return f.Client.Update(ctx, cur) == nil, nil
	})

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
	writer.Stop()
	ld := got.Status.LastDrill
	rto, age := ld.TimeToRestore, ld.BackupAge
	t.Logf("drill %s finished at +%s: passed %t, time to restore %s, backup age %s, recovery point age %s, point %+v, %d keys, backup %s", ld.Restore,
		time.Since(start).Round(time.Second), ld.Passed, dur(rto), dur(age), dur(ld.RecoveryPointAge), ld.PointInTime, ld.Keys, ld.Backup)
	if !ld.Passed || ld.Reason != "" {
		t.Fatalf("lastDrill did not pass: %+v", ld)
	}
	// Everything the schedule stored is encrypted.
	for _, key := range bucket.Keys(t, "db/") {
		if raw := bucketPrefix(t, bucket, key); !strings.HasPrefix(raw, "age-encryption.org/v1") {
			t.Fatalf("%s is stored in the clear (%q...)", key, raw)
		}
	}
	// The drill replayed the capture: its keys are the source's at the revision it reached, and
	// its recovery point is seconds old where the backup's is not.
	pt := ld.PointInTime
	if drill.Spec.PointInTime == nil || pt == nil || pt.Revisions == 0 || pt.Time == nil {
		t.Fatalf("drill spec.pointInTime %+v, lastDrill.pointInTime %+v: want the capture replayed", drill.Spec.PointInTime, pt)
	}
	if want := countAt(t, cli, pt.Revision); ld.Keys != want {
		t.Errorf("lastDrill.keys %d, want the %d keys the source held at revision %d", ld.Keys, want, pt.Revision)
	}
	if rpo := ld.RecoveryPointAge; rpo == nil || rpo.Duration > 15*time.Second || age == nil || rpo.Duration > age.Duration {
		t.Errorf("recoveryPointAge %s, want at most 15 s and at most the backup age %s", dur(rpo), dur(age))
	}
	if rto == nil || rto.Duration <= 0 || rto.Duration > time.Since(created)+5*time.Second {
		t.Errorf("timeToRestore %v not within (0, %s]", rto, time.Since(created).Round(time.Second))
	}
	if age == nil || age.Duration < 0 || age.Duration > 3*time.Minute {
		t.Errorf("backupAge %v not within [0, 3m]", age)
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
	if n, want := countAll(t, cli), int64(keys+len(writer.Stop())); n != want {
		t.Fatalf("template cluster db holds %d keys after the drill, want %d", n, want)
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

// bucketPrefix is the first bytes of the object key as stored.
func bucketPrefix(t testing.TB, b *framework.Bucket, key string) string {
	t.Helper()
	rc, err := b.Backend().GetRange(t.Context(), key, 0, 32)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return string(data)
}

// countAt counts the keys the source held at revision rev.
func countAt(t testing.TB, cli *clientv3.Client, rev int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(rev))
	if err != nil {
		t.Fatalf("counting the keys at revision %d: %v", rev, err)
	}
	return resp.Count
}

func dur(d *metav1.Duration) string {
	if d == nil {
		return "unset"
	}
	return d.Duration.String()
}
