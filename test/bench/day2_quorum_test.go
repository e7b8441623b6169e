//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// survivorAfter is spec.survivorRecovery.afterSeconds of the quorum figures: the least the API
// allows, and part of the figure.
const survivorAfter = 30

// backupLead is how long before the loss the newest backup of the backup path was taken: the
// writes of that window are what a restore loses (a schedule's interval is usually longer).
const backupLead = 10 * time.Second

// benchQuorum times quorum back after a majority of a 3-member cluster on volumes is lost with
// its volumes (framework.LoseVolumes: the leader and a follower), both ways on one cluster per
// run: from the surviving follower (spec.survivorRecovery), then, the same loss again, from a
// backup taken backupLead before it (an in-place EtcdRestore created the moment the loss is
// complete: a person's reaction time is not counted). Each figure goes from the loss to 3 ready
// members; the revisions each loses are those between what was kept (the survivor's revision,
// the backup's) and the last write acknowledged before the loss, under a writer putting a key
// every 20 ms.
func benchQuorum(t *testing.T, f *framework.Framework, rep *report) {
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "bench-quorum")
	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	var survivorSecs, backupSecs, survivorLost, backupLost []float64
	for i := range rep.Runs {
		name := fmt.Sprintf("q-%d", i)
		c := pvcCluster(ns, name, 3, 256*mib)
		c.Spec.SurvivorRecovery = &etcdv1beta2.SurvivorRecoverySpec{AfterSeconds: ptr.To[int32](survivorAfter)}
		f.Create(t, c)
		f.WaitClusterAvailable(t, ns, name, 3, day2Timeout)
		secs, lost := timeQuorumBack(t, f, ns, name, func(time.Time) int64 {
			framework.Eventually(t, day2Timeout, name+" back from a survivor", func(ctx context.Context) (bool, error) {
				c, err := f.GetCluster(ctx, ns, name)
				if err != nil {
					return false, err
				}
				if rec := c.Status.LastSurvivorRecovery; rec == nil || rec.CompletedAt == nil {
					return false, fmt.Errorf("lastSurvivorRecovery %+v", rec)
				}
				err = allReady(c, 3)
				return err == nil, err
			})
			c, err := f.GetCluster(t.Context(), ns, name)
			if err != nil {
				t.Fatal(err)
			}
			return c.Status.LastSurvivorRecovery.Revision
		})
		survivorSecs, survivorLost = append(survivorSecs, secs), append(survivorLost, float64(lost))

		changeSpec(t, f, ns, name, func(c *etcdv1beta2.EtcdCluster) { c.Spec.SurvivorRecovery = nil })
		backup := name + "-backup"
		secs, lost = timeQuorumBack(t, f, ns, name, func(time.Time) int64 {
			f.Create(t, &etcdv1beta2.EtcdRestore{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-restore"},
				Spec:       etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: name}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: backup}},
			})
			f.WaitRestoreSucceeded(t, ns, name+"-restore", day2Timeout)
			framework.Eventually(t, day2Timeout, name+" restored", func(ctx context.Context) (bool, error) {
				c, err := f.GetCluster(ctx, ns, name)
				if err != nil {
					return false, err
				}
				err = allReady(c, 3)
				return err == nil, err
			})
			b := &etcdv1beta2.EtcdBackup{}
			if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: backup}, b); err != nil {
				t.Fatal(err)
			}
			return b.Status.EtcdRevision
		}, withBackup(f, ns, backup, bucket.Source(name+"/backup", "aws")))
		backupSecs, backupLost = append(backupSecs, secs), append(backupLost, float64(lost))
		deleteCluster(t, f, ns, name)
	}
	survivor := fmt.Sprintf("quorum back from the survivor, 3 members with volumes: leader and a follower lost with their volumes -> 3 ready members (survivorRecovery.afterSeconds %d)", survivorAfter)
	rep.add(figure{Name: survivor, Values: survivorSecs, Note: fmt.Sprintf("%d s of each value is the wait before the operator acts", survivorAfter)})
	rep.add(figure{Name: fmt.Sprintf("quorum back from a backup taken %s before the loss: the same loss -> in-place EtcdRestore created at once -> 3 ready members", backupLead), Values: backupSecs, Baseline: survivor,
		Note: "no wait before acting: the restore is created the moment the loss is complete"})
	rep.add(figure{Name: "revisions lost, from the survivor: last acknowledged write's revision before the loss - the survivor's kept revision", Values: survivorLost, Unit: "revisions"})
	rep.add(figure{Name: fmt.Sprintf("revisions lost, from the backup: the same - the backup's revision (a write every 20 ms for %s)", backupLead), Values: backupLost, Unit: "revisions"})
}

// withBackup is a step of timeQuorumBack: an EtcdBackup of the cluster named backup.
func withBackup(f *framework.Framework, ns, backup string, src etcdv1beta2.BackupSource) func(t *testing.T, name string) {
	return func(t *testing.T, name string) {
		f.Create(t, &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backup},
			Spec:       etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: name}, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: src},
		})
		f.WaitBackupCompleted(t, ns, backup, day2Timeout)
	}
}

// timeQuorumBack runs a writer on cluster name, takes a backup (before, when set) backupLead
// before the loss, stops the writer, loses the leader and a follower with their volumes, and
// has recover bring the cluster back and return the revision it kept. It returns the seconds
// from the loss to 3 ready members and the revisions lost, after checking that the cluster
// takes a write.
func timeQuorumBack(t *testing.T, f *framework.Framework, ns, name string, recover func(lostAt time.Time) int64, before ...func(t *testing.T, name string)) (float64, int64) {
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, name))
	writer := framework.StartWriter(cli, fmt.Sprintf("/quorum/%d/", time.Now().UnixNano()))
	time.Sleep(2 * time.Second) //nolint:forbidigo // writes before the backup
	for _, b := range before {
		b(t, name)
	}
	time.Sleep(backupLead) //nolint:forbidigo // writes after the backup, before the loss
	acks := writer.Stop()
	if len(acks) == 0 {
		t.Fatalf("%s: no write acknowledged before the loss", name)
	}
	last := acks[len(acks)-1].Revision
	keep, _ := follower(t, f, ns, name)
	var lose []string
	for _, p := range memberPods(t, f, ns, name) {
		if p.Name != keep {
			lose = append(lose, p.Name)
		}
	}
	slices.Sort(lose)
	f.LoseVolumes(t, ns, name, lose...)
	start := time.Now()
	kept := recover(start)
	secs := time.Since(start).Seconds()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := f.EtcdClient(t, framework.ClientEndpoint(ns, name)).Put(ctx, "/quorum/after", "ok"); err != nil {
		t.Fatalf("%s: not writable after the recovery: %v", name, err)
	}
	t.Logf("%s: %v lost, %s kept: back in %.1f s at revision %d, last acknowledged before the loss %d", name, lose, keep, secs, kept, last)
	return secs, max(0, last-kept)
}
