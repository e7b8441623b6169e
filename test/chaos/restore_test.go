//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// restorePhases are the phases of a restore that a kill can land in, in order.
var restorePhases = []etcdv1beta2.RestorePhase{etcdv1beta2.RestorePhaseVerifying, etcdv1beta2.RestorePhaseSeeding, etcdv1beta2.RestorePhaseGrowing}

// restoreOperatorKilled backs the cluster up (with the backup kinds' 160 MiB fill, so that
// each phase lasts long enough to be seen), restores the backup into a new cluster "r" (the
// cluster as template) and kills the restore operator's process from the host (SIGKILL, then
// its pod) once the restore is in a seeded phase: Verifying, Seeding or Growing. The next
// operator must finish the restore: Succeeded, every member of r verified at the backup's
// revision, and the cluster the load writes to untouched (the checker). Heal counts from the
// kill to Succeeded.
func restoreOperatorKilled(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	bucket := startBackup(t, f, ns, "c/etcd.backup", etcdv1beta2.BackupPathKey)
	b := waitBackupCompleted(t, f, ns, "b")
	want := restorePhases[rng.IntN(len(restorePhases))]
	op := runningPod(t, f, framework.OperatorNamespace, map[string]string{"app.kubernetes.io/name": "restore-operator"})
	pids := hostPIDs(t, op, "restore-operator")
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "r"},
			ClusterTemplate:   &etcdv1beta2.EtcdClusterRef{Name: "c"},
			BackupStorageType: bucket.Type,
			BackupSource:      bucket.Source("c/etcd.backup", "aws"),
		},
	})
	// The phase is polled fast: Verifying lasts about a second. A restore already past the
	// seeded phase is killed in the phase it is in, and the note says so.
	var at etcdv1beta2.RestorePhase
	framework.Eventually(t, 3*time.Minute, fmt.Sprintf("EtcdRestore r in phase %s or later", want), func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "r")
		if err != nil {
			return false, err
		}
		i := slices.Index(restorePhases, rs.Status.Phase)
		if rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed {
			return false, fmt.Errorf("the restore ended (%s) before the kill: %s", rs.Status.Phase, rs.Status.Reason)
		}
		at = rs.Status.Phase
		return i >= slices.Index(restorePhases, want), fmt.Errorf("phase %q", rs.Status.Phase)
	})
	kill(t, pids)
	killed := time.Now()
	t.Logf("fault: restore operator %s killed in phase %s (seeded: %s)", op.Name, at, want)
	killOperator(t, f, "restore-operator")
	rs := f.WaitRestoreSucceeded(t, ns, "r", healTimeout)
	v := rs.Status.Verification
	if v == nil || !v.Passed || v.MembersVerified != 3 || rs.Status.RestoredRevision < b.Status.EtcdRevision {
		t.Fatalf("restore r: verification %+v, restored revision %d, backup revision %d", v, rs.Status.RestoredRevision, b.Status.EtcdRevision)
	}
	f.WaitClusterAvailable(t, ns, "r", 3, time.Minute)
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed in %s (seeded %s); the restore of %d MiB into r Succeeded %s after the kill, 3 members verified at revision %d",
		at, want, b.Status.Size>>20, time.Since(killed).Round(100*time.Millisecond), rs.Status.RestoredRevision)}
}
