//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	killed, rs := killAndFinish(t, f, ns, "r", "r", "restore-operator", pids, b, fmt.Sprintf("in phase %s (seeded: %s)", at, want))
	return injected{size: 3, over: killed, note: fmt.Sprintf("killed in %s (seeded %s); the restore of %d MiB into r Succeeded %s after the kill, 3 members verified at revision %d",
		at, want, b.Status.Size>>20, time.Since(killed).Round(100*time.Millisecond), rs.Status.RestoredRevision)}
}

// The points of an in-place restore a kill can land at, in order.
const (
	inPlaceVerifying = "verifying the backup"
	inPlaceDeleting  = "the old cluster being deleted"
	inPlaceSeeding   = "the new cluster seeding"
	inPlaceGrowing   = "the new cluster growing"
)

var inPlacePoints = []string{inPlaceVerifying, inPlaceDeleting, inPlaceSeeding, inPlaceGrowing}

// inPlaceRestoreKilled restores a second cluster, d, in place from its backup while the load
// runs on c, and kills the process of operator (the restore operator, or the etcd operator,
// which since issue 28 retains the old volumes and builds and verifies every restored member)
// from the host (SIGKILL, then its pod) at a seeded point: while the backup is verified, while
// the old d is being deleted, while the new d seeds, or while it grows. The next operator must
// finish the restore: d holds exactly the backup's keys and values (key by key, and its
// keyspace hash), every member verified; c untouched (the checker). Heal counts from the kill
// to Succeeded.
func inPlaceRestoreKilled(operator string) func(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	return func(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
		return inPlaceRestoreKilledRun(t, f, ns, rng, operator)
	}
}

func inPlaceRestoreKilledRun(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand, operator string) injected {
	d := newCluster(ns, "d")
	f.Create(t, d)
	f.WaitClusterAvailable(t, ns, "d", 3, availableAfter)
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "d"))
	const keys = 2000
	framework.PutDataset(t, cli, "/data/", 0, keys)
	wantHash := framework.KeyspaceSHA256(t, cli, "/data/")
	bucket := startBackupOf(t, f, ns, "d", "bd", "d/etcd.backup", etcdv1beta2.BackupPathKey)
	b := waitBackupCompleted(t, f, ns, "bd")
	// Written after the backup: an in-place restore must take d back to the backup, without it.
	if _, err := cli.Put(t.Context(), "/data/after-backup", "x"); err != nil {
		t.Fatal(err)
	}
	old, err := f.GetCluster(t.Context(), ns, "d")
	if err != nil {
		t.Fatal(err)
	}
	want := inPlacePoints[rng.IntN(len(inPlacePoints))]
	op := runningPod(t, f, framework.OperatorNamespace, map[string]string{"app.kubernetes.io/name": operator})
	pids := hostPIDs(t, op, operator)
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rd"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "d"},
			BackupStorageType: bucket.Type,
			BackupSource:      bucket.Source("d/etcd.backup", "aws"),
		},
	})
	var at string
	framework.Eventually(t, 3*time.Minute, "the in-place restore at "+want+" or later", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "rd")
		if err != nil {
			return false, err
		}
		if rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed {
			return false, fmt.Errorf("the restore ended (%s) before the kill: %s", rs.Status.Phase, rs.Status.Reason)
		}
		cur, err := f.GetCluster(ctx, ns, "d")
		switch {
		case rs.Status.Phase == etcdv1beta2.RestorePhaseGrowing:
			at = inPlaceGrowing
		case err == nil && cur.UID != old.UID:
			at = inPlaceSeeding
		case (err == nil && cur.DeletionTimestamp != nil) || apierrors.IsNotFound(err):
			at = inPlaceDeleting
		case err != nil:
			return false, err
		case rs.Status.Phase == etcdv1beta2.RestorePhaseVerifying:
			at = inPlaceVerifying
		default:
			return false, fmt.Errorf("phase %q", rs.Status.Phase)
		}
		return slices.Index(inPlacePoints, at) >= slices.Index(inPlacePoints, want), fmt.Errorf("at %s", at)
	})
	killed, _ := killAndFinish(t, f, ns, "rd", "d", operator, pids, b, fmt.Sprintf("at %s (seeded: %s)", at, want))
	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "d"))
	if n, diffs := framework.CheckDataset(t, cli, "/data/", keys); len(diffs) > 0 {
		t.Fatalf("restored d: %d keys, differences: %v", n, diffs)
	}
	if got := framework.KeyspaceSHA256(t, cli, "/data/"); got != wantHash {
		t.Fatalf("restored d's keyspace hash differs from the one before the backup")
	}
	return injected{size: 3, over: killed, note: fmt.Sprintf("%s killed at %s (seeded %s); d restored in place (%d MiB) %s after the kill, %d keys checked one by one",
		operator, at, want, b.Status.Size>>20, time.Since(killed).Round(100*time.Millisecond), keys)}
}

// killAndFinish kills operator's processes (then its pod) and waits until the next operator
// finished EtcdRestore restore of cluster: Succeeded, 3 members verified at a revision
// at least the backup's, the cluster Available. It returns when the kill was and the restore.
func killAndFinish(t *testing.T, f *framework.Framework, ns, restore, cluster, operator string, pids []int, b *etcdv1beta2.EtcdBackup, where string) (time.Time, *etcdv1beta2.EtcdRestore) {
	t.Helper()
	kill(t, pids)
	killed := time.Now()
	t.Logf("fault: %s killed %s", operator, where)
	killOperator(t, f, operator)
	rs := f.WaitRestoreSucceeded(t, ns, restore, healTimeout)
	v := rs.Status.Verification
	if v == nil || !v.Passed || v.MembersVerified != 3 || rs.Status.RestoredRevision < b.Status.EtcdRevision {
		t.Fatalf("restore %s: verification %+v, restored revision %d, backup revision %d", restore, v, rs.Status.RestoredRevision, b.Status.EtcdRevision)
	}
	f.WaitClusterAvailable(t, ns, cluster, 3, time.Minute)
	return killed, rs
}
