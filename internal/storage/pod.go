package storage

import (
	"fmt"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// PodSecrets mounts, read-only, every Secret l names (credentials, CA bundle and encryption
// keys, once each) at root/<name>, where DirSecrets{Root: root} finds them: the volumes to add
// to a pod and the mounts to add to the container that opens l.
func PodSecrets(l Location, root string) ([]corev1.Volume, []corev1.VolumeMount) {
	var names []string
	for _, n := range []string{l.Secret, caName(l), l.Encryption} {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, n := range names {
		vol := fmt.Sprintf("storage-secret-%d", i)
		// Optional: a restored member's pod keeps these volumes for life, and its restore step
		// reads them only once (it finds the data dir restored on every later start). A Secret
		// rotated away or deleted must not keep the member in ContainerCreating after a node
		// reboot; a restore that does need it fails with SecretNotFound (DirSecrets).
		vols = append(vols, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: n, Optional: ptr.To(true)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: filepath.Join(root, n), ReadOnly: true})
	}
	return vols, mounts
}

func caName(l Location) string {
	if l.CA == nil {
		return ""
	}
	return l.CA.Name
}
