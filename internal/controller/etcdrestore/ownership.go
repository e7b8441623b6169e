package etcdrestore

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// restoreRef is a (non-controller) owner reference to rs.
func restoreRef(rs *etcdv1beta2.EtcdRestore) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: rs.Name, UID: rs.UID}
}

// controlledBy reports whether obj's controller is the object with uid.
func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// ownedBy reports whether obj has an owner reference (controller or not) to uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// ours reports whether c is the cluster rs made: it names rs in its restore bootstrap and
// carries rs's UID. A cluster of the previous release (no UID annotation) is rs's if it was
// made no earlier than rs: an EtcdRestore deleted and re-created under the same name never
// takes its predecessor's cluster for its own.
func ours(c *etcdv1beta2.EtcdCluster, rs *etcdv1beta2.EtcdRestore) bool {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil || c.Spec.Bootstrap.Restore.RestoreName != rs.Name {
		return false
	}
	if uid, ok := c.Annotations[etcdv1beta2.AnnotationRestoreUID]; ok {
		return uid == string(rs.UID)
	}
	return !c.CreationTimestamp.Before(&rs.CreationTimestamp)
}
