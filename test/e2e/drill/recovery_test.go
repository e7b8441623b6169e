//go:build e2e

package drill

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestAutomaticRecovery (issue 18 item 7): a 3-member emptyDir cluster with spec.recovery and
// a schedule that backs it up every minute. After a backup of 1,000 keys, 200 more are
// written, then every member pod is deleted (every member's data with it). After
// afterSeconds the operator restores from the schedule's newest backup by itself: the
// cluster is Available with the backed-up keys, and the loss is recorded in
// status.lastRecovery and an AutomaticRecovery event.
func TestAutomaticRecovery(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "recovery")
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{
		Size: 3, Recovery: &etcdv1beta2.RecoverySpec{BackupScheduleName: "minutely", AfterSeconds: ptr.To[int32](30)}}})
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, 1000)

	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minutely"}, Spec: etcdv1beta2.BackupScheduleSpec{
		Schedule: "*/1 * * * *",
		BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "db"}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: bucket.Source("db/", "aws")}},
	}})
	var backedUp time.Time
	framework.Eventually(t, 3*time.Minute, "a scheduled backup", func(ctx context.Context) (bool, error) {
		s := &etcdv1beta2.EtcdBackupSchedule{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "minutely"}, s); err != nil {
			return false, err
		}
		if s.Status.LastSuccessfulTime == nil {
			return false, fmt.Errorf("no successful backup yet")
		}
		backedUp = s.Status.LastSuccessfulTime.Time
		return true, nil
	})
	// Suspend the schedule so the newest backup is the one with 1,000 keys, then write more.
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "minutely"}, s); err != nil {
		t.Fatal(err)
	}
	before := s.DeepCopy()
	s.Spec.Suspend = ptr.To(true)
	if err := f.Client.Patch(t.Context(), s, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	framework.PutDataset(t, cli, "/after-backup/", 0, 200)
	resp, err := cli.Get(t.Context(), "/after-backup/")
	if err != nil {
		t.Fatal(err)
	}
	// The operator has seen the writes (status.lastRevision, from its passes) before the loss.
	framework.Eventually(t, 2*time.Minute, "the last revision observed", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, "db")
		if err != nil {
			return false, err
		}
		return c.Status.LastRevision >= resp.Header.Revision, fmt.Errorf("status.lastRevision %d, etcd at %d", c.Status.LastRevision, resp.Header.Revision)
	})

	// Every member pod goes, with its data.
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": "db"}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := f.Client.Delete(t.Context(), &pods.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	lost := time.Now()
	framework.Eventually(t, 6*time.Minute, "recovered by the operator", func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, "db")
		if err != nil {
			return false, err
		}
		if c.Status.LastRecovery == nil || int(c.Status.ReadyMembers) != 3 {
			return false, fmt.Errorf("phase %s ready %d lastRecovery %+v", c.Status.Phase, c.Status.ReadyMembers, c.Status.LastRecovery)
		}
		return true, nil
	})
	c, err := f.GetCluster(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Status.LastRecovery
	t.Logf("MEASURE pods deleted -> recovered (afterSeconds 30): %s; lastRecovery %+v", time.Since(lost).Round(time.Second), rec)
	rs := f.WaitRestoreSucceeded(t, ns, rec.RestoreName, 5*time.Minute)
	// The 200 keys went in as a few transactions: the revisions lost are those after the backup.
	wantRevs := resp.Header.Revision - rs.Status.BackupRevision
	if !strings.HasPrefix(rs.Name, "db-recovery-") || rec.RPOSeconds < int64(lost.Sub(backedUp)/time.Second)-5 || wantRevs <= 0 || rec.RPORevisions < wantRevs {
		t.Fatalf("restore %s, RPO %ds / %d revisions: want at least %s and %d revisions", rs.Name, rec.RPOSeconds, rec.RPORevisions, lost.Sub(backedUp).Round(time.Second), wantRevs)
	}
	if n, _ := framework.CheckDataset(t, restored0(t, f, ns), "/after-backup/", 200); n != 0 {
		t.Fatalf("%d keys written after the backup are in the restored cluster", n)
	}
	restored := restored0(t, f, ns)
	if n, bad := framework.CheckDataset(t, restored, prefix, 1000); n != 1000 || len(bad) > 0 {
		t.Fatalf("restored %d keys of the backup, bad %v", n, bad)
	}
	evs := &corev1.EventList{}
	if err := f.Client.List(t.Context(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Type == corev1.EventTypeWarning && e.Reason == "AutomaticRecovery")
	}
	if !found {
		t.Fatal("no AutomaticRecovery event")
	}
}

// restored0 is a client of the restored cluster db through its client Service, once the
// Service answers. The restore verifies every member at its pod; the Service routes to a
// member only once the kubelet's readiness probe (every 5 s) passed and kube-proxy followed,
// which can come a few seconds after Succeeded (a CI rehearsal's first read got a 404).
func restored0(t *testing.T, f *framework.Framework, ns string) *clientv3.Client {
	t.Helper()
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	framework.Eventually(t, time.Minute, "the restored cluster answers through its client Service", func(ctx context.Context) (bool, error) {
		_, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
		return err == nil, err
	})
	return cli
}
