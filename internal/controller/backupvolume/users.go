package backupvolume

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// claimOf is the claim a storage block names, or "".
func claimOf(typ etcdv1beta2.BackupStorageType, src *etcdv1beta2.BackupSource) string {
	if typ != etcdv1beta2.BackupStorageTypePVC || src.PVC == nil {
		return ""
	}
	return src.PVC.ClaimName
}

// backupClaim is the claim of an EtcdBackup that still writes: periodic, or one-shot and not
// finished.
func backupClaim(b *etcdv1beta2.EtcdBackup) string {
	if b.IsFinished() && !b.Spec.IsPeriodic() {
		return ""
	}
	return claimOf(b.Spec.StorageType, &b.Spec.BackupSource)
}

// scheduleClaim is the claim a schedule backs up to: every schedule, suspended or not, since
// its retention, drills and restores by backupScheduleRef read the claim too.
func scheduleClaim(s *etcdv1beta2.EtcdBackupSchedule) string {
	return claimOf(s.Spec.BackupTemplate.Spec.StorageType, &s.Spec.BackupTemplate.Spec.BackupSource)
}

// restoreFinished reports whether an EtcdRestore is done with its backup.
func restoreFinished(rs *etcdv1beta2.EtcdRestore) bool {
	return rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed
}

// clusterClaim is the claim an EtcdCluster restores its members from, until it is Restored.
func clusterClaim(c *etcdv1beta2.EtcdCluster) string {
	r := c.Spec.Bootstrap
	if r == nil || r.Restore == nil || r.Restore.Source == nil || meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored) {
		return ""
	}
	return claimOf(r.Restore.Source.StorageType, &r.Restore.Source.BackupSource)
}

// users lists what in namespace ns names claim as its storage and still needs it, as
// "<Kind>/<name>": while it is not empty, the claim's server runs.
func users(ctx context.Context, c client.Reader, ns, claim string) ([]string, error) {
	var out []string
	in := client.InNamespace(ns)
	var backups etcdv1beta2.EtcdBackupList
	if err := c.List(ctx, &backups, in); err != nil {
		return nil, err
	}
	for i := range backups.Items {
		if backupClaim(&backups.Items[i]) == claim {
			out = append(out, "EtcdBackup/"+backups.Items[i].Name)
		}
	}
	var schedules etcdv1beta2.EtcdBackupScheduleList
	if err := c.List(ctx, &schedules, in); err != nil {
		return nil, err
	}
	for i := range schedules.Items {
		if scheduleClaim(&schedules.Items[i]) == claim {
			out = append(out, "EtcdBackupSchedule/"+schedules.Items[i].Name)
		}
	}
	var restores etcdv1beta2.EtcdRestoreList
	if err := c.List(ctx, &restores, in); err != nil {
		return nil, err
	}
	for i := range restores.Items {
		rs := &restores.Items[i]
		if restoreFinished(rs) {
			continue
		}
		got, err := restoreClaim(ctx, c, rs)
		if err != nil {
			return nil, err
		}
		if got == claim {
			out = append(out, "EtcdRestore/"+rs.Name)
		}
	}
	var clusters etcdv1beta2.EtcdClusterList
	if err := c.List(ctx, &clusters, in); err != nil {
		return nil, err
	}
	for i := range clusters.Items {
		if clusterClaim(&clusters.Items[i]) == claim {
			out = append(out, "EtcdCluster/"+clusters.Items[i].Name)
		}
	}
	return out, nil
}

// restoreClaim is the claim an EtcdRestore reads: its own block, or that of the EtcdBackup or
// schedule it names (one that is gone names none).
func restoreClaim(ctx context.Context, c client.Reader, rs *etcdv1beta2.EtcdRestore) (string, error) {
	switch {
	case rs.Spec.BackupStorageType != "":
		return claimOf(rs.Spec.BackupStorageType, &rs.Spec.BackupSource), nil
	case rs.Spec.BackupRef != nil:
		var b etcdv1beta2.EtcdBackup
		if err := c.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.BackupRef.Name}, &b); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		return claimOf(b.Spec.StorageType, &b.Spec.BackupSource), nil
	case rs.Spec.BackupScheduleRef != nil:
		var s etcdv1beta2.EtcdBackupSchedule
		if err := c.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.BackupScheduleRef.Name}, &s); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		return scheduleClaim(&s), nil
	}
	return "", fmt.Errorf("EtcdRestore %s names no backup", rs.Name)
}
