package member

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// DefaultUser is the user, group and fsGroup member pods run as when spec.pod.securityContext
// is unset (the "nonroot" user of distroless images, as the operator image).
const DefaultUser int64 = 65532

// podSecurityContext is spec.pod.securityContext when set, else a context that Pod Security
// "restricted" admits: not root, the data volume group-owned by DefaultUser (changed only
// when its root does not match, so a large volume is not walked on every start), RuntimeDefault
// seccomp.
func podSecurityContext(policy *etcdv1beta2.PodPolicy) *corev1.PodSecurityContext {
	if policy.SecurityContext != nil {
		return policy.SecurityContext
	}
	onRootMismatch := corev1.FSGroupChangeOnRootMismatch
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(DefaultUser),
		RunAsGroup:          ptr.To(DefaultUser),
		FSGroup:             ptr.To(DefaultUser),
		FSGroupChangePolicy: &onRootMismatch,
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// ContainerSecurityContext is spec.pod.containerSecurityContext when set, else the restricted
// default of the etcd container and of the restore seed's init containers: no privilege
// escalation, every capability dropped, a read-only root filesystem (etcd writes only to its
// data volume) and RuntimeDefault seccomp (also here, so that a pod-level securityContext of
// the user's without one still passes "restricted").
func ContainerSecurityContext(c *etcdv1beta2.EtcdCluster) *corev1.SecurityContext {
	if c.Spec.Pod != nil && c.Spec.Pod.ContainerSecurityContext != nil {
		return c.Spec.Pod.ContainerSecurityContext.DeepCopy()
	}
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// The etcd container's liveness and startup probes: the kubelet restarts a member whose
// process stopped serving local reads for about livenessPeriodSeconds*livenessFailureThreshold
// seconds (kubeadm's etcd manifest); a member that is still starting (replaying its WAL,
// loading a large database) has startupPeriodSeconds*startupFailureThreshold, kubeadm's 240 s.
// The startup probe looks every second instead of kubeadm's 10: the operator dials a member
// only once the kubelet reports its container started (observe.go), so the period is how late
// a new member can be seen.
// A missing leader or quorum does not restart anyone: that is the operator's business.
const (
	livenessPeriodSeconds    = 10
	livenessTimeoutSeconds   = 15
	livenessFailureThreshold = 8
	startupPeriodSeconds     = 1
	startupTimeoutSeconds    = 15
	startupFailureThreshold  = 240
	livezPath                = "/livez"
	legacyLivenessPath       = "/health?serializable=true&exclude=NOSPACE"
	livezSince               = "3.5.11"
)

// LivenessPath is the liveness endpoint of etcd version: /livez (a serializable read; etcd
// 3.5.11 and later), else /health?serializable=true&exclude=NOSPACE (3.5.3 and later do not
// need a leader for it).
func LivenessPath(version string) string {
	if cluster.CompareVersions(version, livezSince) >= 0 {
		return livezPath
	}
	return legacyLivenessPath
}

func livenessProbes(version string) (liveness, startup *corev1.Probe) {
	handler := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: LivenessPath(version), Port: intstr.FromInt32(MetricsPort)}}
	liveness = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: livenessPeriodSeconds,
		TimeoutSeconds: livenessTimeoutSeconds, FailureThreshold: livenessFailureThreshold}
	startup = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: startupPeriodSeconds,
		TimeoutSeconds: startupTimeoutSeconds, FailureThreshold: startupFailureThreshold}
	return liveness, startup
}
