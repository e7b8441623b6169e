package etcdrestore

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

const reasonSeedReady = "SeedRunning"

// seedMeta marks obj as rs's seed in cluster c: controlled by c (a member from the start, never
// owned by the EtcdRestore, so deleting a finished EtcdRestore deletes no member), labelled with
// rs's name and annotated with its UID.
func seedMeta(obj metav1.Object, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) {
	labels := obj.GetLabels()
	labels[LabelRestore] = rs.Name
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationRestoreUID] = string(rs.UID)
	obj.SetAnnotations(annotations)
	obj.SetOwnerReferences([]metav1.OwnerReference{clusterRef(c)})
}

// seedPVC is the seed member's data volume, or nil when c runs its members on emptyDir.
func seedPVC(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string) *corev1.PersistentVolumeClaim {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	pvc := member.NewPVC(c, name)
	seedMeta(pvc, rs, c)
	return pvc
}

// seedPod is the pod of member name, one of the members restored at once (names), marked as
// rs's seed.
func (r *Reconciler) seedPod(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string, names []string, src *source) *corev1.Pod {
	pod := restoreboot.Pod(c, name, names, restoreboot.Source{
		Loc:          src.loc,
		Expect:       restoreseed.Expect{Size: rs.Status.BackupSize, SHA256: rs.Status.BackupSHA256},
		RevisionBump: revisionBump(rs),
	}, r.AgentImage)
	seedMeta(pod, rs, c)
	return pod
}

// revisionBump is how far rs raises the restored revision above the backup's (spec.revisionBump,
// default etcdv1beta2.DefaultRevisionBump).
func revisionBump(rs *etcdv1beta2.EtcdRestore) int64 {
	if b := rs.Spec.RevisionBump; b != nil {
		return *b
	}
	return etcdv1beta2.DefaultRevisionBump
}
