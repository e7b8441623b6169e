package etcdrestore

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
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
	}
}

// memberObjects are the volume (with volumes) and pod of member name, one of names, exactly as
// the etcd operator creates them for c from its bootstrap.restore.source (what the preflight
// dry-runs). A source the etcd operator would refuse is refused here, before anything is touched.
func (r *Reconciler) memberObjects(c *etcdv1beta2.EtcdCluster, name string, names []string) ([]client.Object, error) {
	src, err := restoreboot.FromSpec(c.Spec.Bootstrap.Restore.Source)
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		objs = append(objs, member.NewPVC(c, name))
	}
	return append(objs, restoreboot.Pod(c, name, names, src, r.AgentImage)), nil
}
