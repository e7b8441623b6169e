package backupvolume

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// AnnotationClaim is on the server's objects: the claim's full name (a label value cannot hold
// every claim name), for the watches that map them back to their claim.
const AnnotationClaim = "etcd.database.coreos.com/backup-volume-claim"

// certValidity is how long a server's certificate is valid; it is renewed (a new Secret and
// pod) once less than certRenewBefore is left.
const (
	certValidity    = 365 * 24 * time.Hour
	certRenewBefore = 30 * 24 * time.Hour
)

// Paths inside the server's container.
const (
	mountBackups = "/backups"
	mountSecret  = "/etc/volume-server" //nolint:gosec // a mount path, not a credential
	serverUser   = int64(65532)         // the operator image's nonroot user, as member pods
)

// objectMeta is the metadata of the claim's server objects: named after it, labelled for the
// operators' cache (app=etcd) and the Service's selector, controlled by the claim.
func objectMeta(pvc *corev1.PersistentVolumeClaim) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      backupvolume.Name(pvc.Name),
		Namespace: pvc.Namespace,
		Labels: map[string]string{
			"app":                       "etcd",
			backupvolume.LabelClaim:     backupvolume.Name(pvc.Name),
			"app.kubernetes.io/part-of": "etcd-operator",
		},
		Annotations: map[string]string{AnnotationClaim: pvc.Name},
		// Not blockOwnerDeletion: with the OwnerReferencesPermissionEnforcement admission plugin
		// (OpenShift, hardened clusters) that would need update on persistentvolumeclaims/finalizers,
		// a write on users' claims the operator has no use for; the claim's own protection already
		// waits for the pod that mounts it.
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: pvc.Name, UID: pvc.UID,
			Controller: ptr.To(true),
		}},
	}
}

// newSecret is the server's Secret with fresh credentials: a token and a certificate for the
// Service's names.
func newSecret(pvc *corev1.PersistentVolumeClaim, now time.Time) (*corev1.Secret, error) {
	creds, err := volume.NewCredentials(backupvolume.URL(pvc.Name, pvc.Namespace), backupvolume.Hosts(pvc.Name, pvc.Namespace), now, certValidity)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{ObjectMeta: objectMeta(pvc), Type: corev1.SecretTypeOpaque, Data: creds.Data()}, nil
}

func newService(pvc *corev1.PersistentVolumeClaim) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(pvc),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{backupvolume.LabelClaim: backupvolume.Name(pvc.Name)},
			Ports:    []corev1.ServicePort{{Name: "https", Port: backupvolume.Port, TargetPort: intstr.FromInt32(backupvolume.Port)}},
		},
	}
}

// newPod is the server: the backup-operator binary's volume-server on the claim, Pod Security
// restricted, with the Secret's token, certificate and key; no service account token.
func newPod(pvc *corev1.PersistentVolumeClaim, image string) *corev1.Pod {
	name := backupvolume.Name(pvc.Name)
	return &corev1.Pod{
		ObjectMeta: objectMeta(pvc),
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:        ptr.To(true),
				RunAsUser:           ptr.To(serverUser),
				RunAsGroup:          ptr.To(serverUser),
				FSGroup:             ptr.To(serverUser),
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    "server",
				Image:   image,
				Command: []string{"/usr/local/bin/backup-operator"},
				Args: []string{"volume-server", "--dir", mountBackups, "--listen", ":8443",
					"--token-file", mountSecret + "/" + volume.SecretTokenKey,
					"--cert-file", mountSecret + "/" + volume.SecretCertKey, "--key-file", mountSecret + "/" + volume.SecretKeyKey},
				Env:   []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "96MiB"}},
				Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: backupvolume.Port}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(backupvolume.Port)}},
					PeriodSeconds: 2,
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("192Mi")},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "backups", MountPath: mountBackups},
					{Name: "credentials", MountPath: mountSecret, ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "backups", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}},
				{Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: ptr.To[int32](0o440)}}},
			},
		},
	}
}
