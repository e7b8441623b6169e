//go:build e2e

package restore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestInPlaceRestoreWithMemberOnLostNode (issue 34): a 3-member cluster on volumes is backed up,
// takes more writes, and loses the node of one member (hack/local-cluster.sh node-down). Once the
// Node is NotReady, an in-place EtcdRestore of that cluster stops the old members; the one on the
// lost node can never finish terminating (no kubelet confirms it stopped; it might still run),
// so the restore waits and says so (condition OldPodsStuck naming the pod and its node) instead
// of deleting the old cluster under it. A person then fences the node the Kubernetes way, with
// the node.kubernetes.io/out-of-service taint (non-graceful node shutdown): Kubernetes deletes
// the node's pods and the restore finishes with no annotation, no operator force-deleting
// anything. The cluster comes back Available with three members, none on the lost node,
// holding exactly the backup's keyspace (the writes after it gone). Needs three schedulable
// nodes (`make test-multinode`).
func TestInPlaceRestoreWithMemberOnLostNode(t *testing.T) {
	f := framework.Global(t)
	f.NeedThreeNodes(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "restore-nodeloss")
	ctx := t.Context()

	f.Create(t, clusterOnVolumes(ns, "db", "256Mi"))
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	const n = 2_000
	framework.PutDataset(t, cli, prefix, 0, n)
	want := framework.KeyspaceSHA256(t, cli, prefix)

	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-backup"},
		Spec: etcdv1beta2.BackupSpec{
			EtcdCluster:  &etcdv1beta2.EtcdClusterRef{Name: "db"},
			StorageType:  etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("db/etcd.backup", "aws"),
		},
	})
	f.WaitBackupCompleted(t, ns, "db-backup", 3*time.Minute)
	framework.PutDataset(t, cli, prefix, n, n+100) // after the backup: the restore drops them

	member, lost := f.MemberOffHost(t, ns, "db")
	f.NodeDown(t, lost)
	t.Logf("node %s lost with member %s", lost, member)
	framework.Eventually(t, 3*time.Minute, "node "+lost+" NotReady", func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := f.Client.Get(ctx, client.ObjectKey{Name: lost}, node); err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status != corev1.ConditionTrue, fmt.Errorf("Ready %s", c.Status)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})

	start := time.Now()
	f.Create(t, coreosRestore(ns, "db", "db", bucket.Source("db/etcd.backup", "aws")))
	framework.Eventually(t, 8*time.Minute, "the restore to report the lost member's pod stuck", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "db")
		if err != nil {
			return false, err
		}
		if rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed {
			t.Fatalf("the restore ended (%s: %s) while a pod of the old cluster might still run on the lost node", rs.Status.Phase, rs.Status.Reason)
		}
		c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionOldPodsStuck)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, member+" (node "+lost), fmt.Errorf("OldPodsStuck %+v", c)
	})
	t.Logf("OldPodsStuck after %s; fencing %s with the out-of-service taint", time.Since(start).Round(time.Second), lost)
	fence := []string{"taint", "node", lost, corev1.TaintNodeOutOfService + "=nodeshutdown:NoExecute"}
	t.Cleanup(func() { // before the node comes back (cleanups run last-in first-out)
		if _, _, err := f.Kubectl(context.Background(), "taint", "node", lost, corev1.TaintNodeOutOfService+"-"); err != nil {
			t.Errorf("removing the out-of-service taint of %s: %v", lost, err)
		}
	})
	if out, errOut, err := f.Kubectl(ctx, fence...); err != nil {
		t.Fatalf("kubectl %v: %v %s %s", fence, err, out, errOut)
	}
	rs := f.WaitRestoreSucceeded(t, ns, "db", 8*time.Minute)
	f.WaitClusterAvailable(t, ns, "db", 3, time.Minute)
	t.Logf("in-place restore with %s on the lost node: %s, fence included (status: %s)", member, time.Since(start).Round(time.Second), rs.Status.Duration.Duration)

	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "db"))
	got, diffs := framework.CheckDataset(t, cli, prefix, n)
	if len(diffs) > 0 || got != n {
		t.Fatalf("restored cluster: %d keys, want the backup's %d; differences: %s", got, n, strings.Join(diffs, "; "))
	}
	if h := framework.KeyspaceSHA256(t, cli, prefix); h != want {
		t.Fatal("the restored keyspace differs from the backup's")
	}
	restored, err := f.GetCluster(ctx, ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"etcd_cluster": "db"}); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range pods.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName == lost:
			t.Errorf("pod %s runs on the lost node", p.Name)
		default:
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != restored.UID {
				t.Errorf("pod %s is not the restored cluster's: %v", p.Name, p.OwnerReferences)
			}
			live++
		}
	}
	if live != 3 {
		t.Fatalf("%d live members, want 3", live)
	}
}
