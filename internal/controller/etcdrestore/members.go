package etcdrestore

import (
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// restoreSource is the bootstrap.restore.source of the cluster rs restores into: the verified
// backup object src, pinned by the size and sha256 the verification read and the revision the
// backup recorded.
func restoreSource(rs *etcdv1beta2.EtcdRestore, src *source) *etcdv1beta2.RestoreSource {
	return &etcdv1beta2.RestoreSource{
		StorageType:  src.loc.Type,
		BackupSource: src.loc.Block(),
		SHA256:       rs.Status.BackupSHA256,
		Size:         rs.Status.BackupSize,
		Revision:     rs.Status.BackupRevision,
		RevisionBump: rs.Spec.RevisionBump,
		PointInTime:  resolvedPoint(rs),
	}
}

// resolvedPoint is the point rs's restored cluster replays the capture to: the revision
// spec.pointInTime was resolved to, nil when there is nothing to replay.
func resolvedPoint(rs *etcdv1beta2.EtcdRestore) *etcdv1beta2.PointInTime {
	if pt := rs.Status.PointInTime; pt != nil && pt.Revisions > 0 {
		return &etcdv1beta2.PointInTime{Revision: pt.Revision}
	}
	return nil
}
