//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestQuorumFromSurvivor (issue 31 item 3): a 3-member volume cluster under a writer loses its
// leader and a follower with their volumes (framework.LoseVolumes). With
// spec.survivorRecovery the operator restarts the surviving follower alone with
// --force-new-cluster after afterSeconds and grows the cluster back to three: it is writable
// again, every write acknowledged at or below the survivor's revision and every write after the
// recovery is there, the survivor kept its volume, status.lastSurvivorRecovery names it, and
// every member serves the same keys.
func TestQuorumFromSurvivor(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-survivor")
	c := onVolumes(newCluster(ns, "c", 3))
	c.Spec.SurvivorRecovery = &etcdv1beta2.SurvivorRecoverySpec{AfterSeconds: ptr.To[int32](30)}
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	writer := framework.StartWriter(cli, "/survivor/")
	time.Sleep(3 * time.Second) // some writes before the loss

	var lose []string
	survivor := ""
	for _, d := range getCluster(t, f, ns, "c").Status.Members.Details {
		if d.Role != etcdv1beta2.MemberRoleLeader && survivor == "" {
			survivor = d.Name
		} else {
			lose = append(lose, d.Name)
		}
	}
	slices.Sort(lose)
	survivorVolume := &corev1.PersistentVolumeClaim{}
	if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: survivor}, survivorVolume); err != nil {
		t.Fatal(err)
	}
	f.LoseVolumes(t, ns, "c", lose...)
	lostAt := time.Now()

	framework.Eventually(t, 5*time.Minute, "the cluster back at three members from "+survivor, func(ctx context.Context) (bool, error) {
		cur := getCluster(t, f, ns, "c")
		rec := cur.Status.LastSurvivorRecovery
		return rec != nil && rec.CompletedAt != nil && condition(cur, "Ready") == "True/ClusterHealthy" && cur.Status.ReadyMembers == 3,
			fmt.Errorf("Ready %s, Degraded %s, Progressing %s, ready %d, lastSurvivorRecovery %+v", condition(cur, "Ready"), condition(cur, "Degraded"), condition(cur, "Progressing"), cur.Status.ReadyMembers, rec)
	})
	took := time.Since(lostAt)
	rec := getCluster(t, f, ns, "c").Status.LastSurvivorRecovery
	if rec.Member != survivor || !slices.Equal(rec.LostMembers, lose) || rec.Revision == 0 || len(rec.Candidates) != 1 {
		t.Errorf("status.lastSurvivorRecovery %+v: want %s kept, %v lost", rec, survivor, lose)
	}
	lost := writer.FinishAfterLoss(t, rec.Revision, rec.StartedAt.Time)
	put(t, cli, "/after-recovery", "ok")
	checkMembers(t, f, nil, "http", ns, "c", 3, "/after-recovery", "ok")

	kept := &corev1.PersistentVolumeClaim{}
	if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: survivor}, kept); err != nil || kept.UID != survivorVolume.UID {
		t.Errorf("the survivor's volume %s: %v (uid %s, was %s); want it kept", survivor, err, kept.UID, survivorVolume.UID)
	}
	if kept.Annotations[etcdv1beta2.AnnotationForceNewCluster] != "" {
		t.Errorf("the survivor's volume still marked for --force-new-cluster: %v", kept.Annotations)
	}
	for _, p := range memberPods(t, f, ns, "c") {
		for _, arg := range p.Spec.Containers[0].Command {
			if arg == "--force-new-cluster" {
				t.Errorf("member %s still runs with --force-new-cluster", p.Name)
			}
		}
	}
	if n := countEvents(t, f, ns, etcdv1beta2.ReasonSurvivorRecovery); n != 1 {
		t.Errorf("%d SurvivorRecovery events, want 1", n)
	}
	t.Logf("MEASURE quorum back from survivor %s: writable with 3 members %s after two members were lost with their volumes (afterSeconds 30); kept revision %d, last revision seen %d, %d acknowledged writes lost",
		survivor, took.Round(100*time.Millisecond), rec.Revision, rec.LastRevision, lost)
}
