package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
)

// LabelValue is a label value as Kubernetes accepts it: at most 63 letters, digits, '-', '_'
// or '.', starting and ending with a letter or digit, or empty. An alias of string, so that
// the maps stay map[string]string; it gives the values of pod.labels and pod.nodeSelector
// their schema.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue = string

// PodPolicy is the policy for the etcd member pods the operator creates.
type PodPolicy struct {
	// labels are added to every member pod. "app" and labels starting with "etcd_" are
	// reserved for the operator. Keys and values must be valid Kubernetes labels: a key is an
	// optional DNS subdomain prefix and '/' then a name of at most 63 characters; a value is at
	// most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="pod label keys must be qualified names (as Kubernetes requires of labels): an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, e.g. example.com/team"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'app' && !k.startsWith('etcd_'))",message="pod labels must not use the reserved key 'app' or keys starting with 'etcd_'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="pod labels must be valid labels: keys at most 63 characters after an optional DNS prefix (317 in all), values at most 63 characters"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// nodeSelector restricts member pods to nodes with all of these labels (at most 64; keys
	// and values as labels require).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="nodeSelector keys must be qualified label names (as Kubernetes requires of a pod's nodeSelector): an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, e.g. example.com/team"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// affinity holds the scheduling constraints of member pods. Checked at admission as for a
	// pod: preferred terms have a weight of 1 to 100, pod (anti-)affinity terms a topologyKey.
	// +kubebuilder:validation:XValidation:rule="(!has(self.nodeAffinity) || !has(self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(p, p.weight >= 1 && p.weight <= 100)) && (!has(self.podAffinity) || !has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(p, p.weight >= 1 && p.weight <= 100)) && (!has(self.podAntiAffinity) || !has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(p, p.weight >= 1 && p.weight <= 100))",message="affinity: the weight of a preferred scheduling term must be between 1 and 100"
	// +kubebuilder:validation:XValidation:rule="(!has(self.podAffinity) || ((!has(self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.all(t, size(t.topologyKey) > 0)) && (!has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(p, size(p.podAffinityTerm.topologyKey) > 0)))) && (!has(self.podAntiAffinity) || ((!has(self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.all(t, size(t.topologyKey) > 0)) && (!has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(p, size(p.podAffinityTerm.topologyKey) > 0))))",message="affinity: every pod affinity and anti-affinity term needs a topologyKey, e.g. kubernetes.io/hostname"
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// antiAffinity, when true and affinity is unset, keeps two members of this cluster off the
	// same node (required pod anti-affinity on kubernetes.io/hostname). Deprecated in
	// coreos/etcd-operator in favour of affinity; kept for compatibility.
	// +optional
	AntiAffinity bool `json:"antiAffinity,omitempty"`

	// resources are the compute resources of the etcd container. Requests must not exceed
	// limits, and neither may be negative (cpu, memory, ephemeral-storage).
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || ['cpu', 'memory', 'ephemeral-storage'].all(r, !(r in self.requests) || !(r in self.limits) || quantity(string(self.requests[r])).compareTo(quantity(string(self.limits[r]))) <= 0)",message="resources.requests must not exceed resources.limits (cpu, memory, ephemeral-storage): the pod would be refused"
	// +kubebuilder:validation:XValidation:rule="['cpu', 'memory', 'ephemeral-storage'].all(r, (!has(self.requests) || !(r in self.requests) || !string(self.requests[r]).startsWith('-')) && (!has(self.limits) || !(r in self.limits) || !string(self.limits[r]).startsWith('-')))",message="resources.requests and resources.limits must not be negative (cpu, memory, ephemeral-storage): the pod would be refused"
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// tolerations of member pods (at most 32), checked as for a pod: operator Equal (the
	// default) or Exists, effect NoSchedule, PreferNoSchedule, NoExecute or empty (all), a
	// toleration without key has operator Exists, one with operator Exists has no value, and
	// tolerationSeconds goes with effect NoExecute.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator in ['', 'Equal', 'Exists'])",message="tolerations: operator must be Equal or Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || t.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="tolerations: effect must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, (has(t.key) && size(t.key) > 0) || (has(t.operator) && t.operator == 'Exists'))",message="tolerations: a toleration without key must have operator Exists (it then tolerates every taint)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || size(t.value) == 0)",message="tolerations: value must be empty when operator is Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="tolerations: tolerationSeconds needs effect NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, (!has(t.key) || size(t.key) <= 317) && (!has(t.value) || size(t.value) <= 63))",message="tolerations: key must be a label key (at most 63 characters after an optional DNS prefix, 317 in all) and value a label value (at most 63 characters)"
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// topologySpreadConstraints of member pods, e.g. across zones. A constraint without a
	// labelSelector gets the cluster's member selector, so "spread my members" needs only
	// maxSkew, topologyKey and whenUnsatisfiable. Not in coreos/etcd-operator.
	// Checked as for a pod: maxSkew at least 1, whenUnsatisfiable DoNotSchedule or
	// ScheduleAnyway, minDomains at least 1 and only with DoNotSchedule, nodeAffinityPolicy and
	// nodeTaintsPolicy Honor or Ignore.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.maxSkew >= 1)",message="topologySpreadConstraints: maxSkew must be at least 1"
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.whenUnsatisfiable in ['DoNotSchedule', 'ScheduleAnyway'])",message="topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"
	// +kubebuilder:validation:XValidation:rule="self.all(c, size(c.topologyKey) > 0 && size(c.topologyKey) <= 317)",message="topologySpreadConstraints: topologyKey must be a label key, e.g. topology.kubernetes.io/zone"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.minDomains) || (c.minDomains >= 1 && c.whenUnsatisfiable == 'DoNotSchedule'))",message="topologySpreadConstraints: minDomains must be at least 1, and only with whenUnsatisfiable DoNotSchedule"
	// +kubebuilder:validation:XValidation:rule="self.all(c, (!has(c.nodeAffinityPolicy) || c.nodeAffinityPolicy in ['Honor', 'Ignore']) && (!has(c.nodeTaintsPolicy) || c.nodeTaintsPolicy in ['Honor', 'Ignore']))",message="topologySpreadConstraints: nodeAffinityPolicy and nodeTaintsPolicy must be Honor or Ignore"
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of member pods (e.g. one above the workloads that use etcd, so that
	// members are not preempted by them). Not in coreos/etcd-operator.
	// A DNS-1123 subdomain, as PriorityClass names are.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// etcdEnv are environment variables of the etcd container, e.g. ETCD_QUOTA_BACKEND_BYTES.
	// Do not set flags the operator sets to bootstrap members (such as ETCD_INITIAL_CLUSTER).
	// The variables of the flags the operator sets are refused: ETCD_NAME, ETCD_DATA_DIR,
	// ETCD_WAL_DIR, ETCD_INITIAL_*, ETCD_LISTEN_*, ETCD_ADVERTISE_CLIENT_URLS, ETCD_PEER_*,
	// ETCD_CERT_FILE, ETCD_KEY_FILE, ETCD_TRUSTED_CA_FILE, ETCD_CLIENT_CERT_AUTH.
	// Checked as for a pod: a name, and either value or exactly one valueFrom source.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(e, size(e.name) > 0)",message="etcdEnv: every variable needs a name"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.value) || size(e.value) == 0)",message="etcdEnv: value and valueFrom cannot both be set"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || [has(e.valueFrom.fieldRef), has(e.valueFrom.resourceFieldRef), has(e.valueFrom.configMapKeyRef), has(e.valueFrom.secretKeyRef)].filter(x, x).size() == 1)",message="etcdEnv: valueFrom must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || ((!has(e.valueFrom.secretKeyRef) || (has(e.valueFrom.secretKeyRef.name) && size(e.valueFrom.secretKeyRef.name) > 0 && size(e.valueFrom.secretKeyRef.key) > 0)) && (!has(e.valueFrom.configMapKeyRef) || (has(e.valueFrom.configMapKeyRef.name) && size(e.valueFrom.configMapKeyRef.name) > 0 && size(e.valueFrom.configMapKeyRef.key) > 0))))",message="etcdEnv: valueFrom.secretKeyRef and valueFrom.configMapKeyRef need a name and a key"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.fieldRef) || e.valueFrom.fieldRef.fieldPath in ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'] || e.valueFrom.fieldRef.fieldPath.startsWith('metadata.labels[') || e.valueFrom.fieldRef.fieldPath.startsWith('metadata.annotations['))",message="etcdEnv: valueFrom.fieldRef.fieldPath must be one a container's environment may use: metadata.name, metadata.namespace, metadata.uid, metadata.labels['<key>'], metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP or status.podIPs"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.resourceFieldRef) || e.valueFrom.resourceFieldRef.resource in ['limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage'] || e.valueFrom.resourceFieldRef.resource.startsWith('limits.hugepages-') || e.valueFrom.resourceFieldRef.resource.startsWith('requests.hugepages-'))",message="etcdEnv: valueFrom.resourceFieldRef.resource must be limits or requests of cpu, memory, ephemeral-storage or hugepages-<size>, e.g. limits.memory"
	// +kubebuilder:validation:XValidation:rule="!self.exists(e, e.name in ['ETCD_NAME', 'ETCD_DATA_DIR', 'ETCD_WAL_DIR', 'ETCD_ADVERTISE_CLIENT_URLS', 'ETCD_CERT_FILE', 'ETCD_KEY_FILE', 'ETCD_TRUSTED_CA_FILE', 'ETCD_CLIENT_CERT_AUTH'] || e.name.startsWith('ETCD_INITIAL_') || e.name.startsWith('ETCD_LISTEN_') || e.name.startsWith('ETCD_PEER_'))",message="etcdEnv must not set the variables of the flags the operator sets for each member (ETCD_NAME, ETCD_DATA_DIR, ETCD_WAL_DIR, ETCD_INITIAL_*, ETCD_LISTEN_*, ETCD_ADVERTISE_CLIENT_URLS, ETCD_PEER_*, ETCD_CERT_FILE, ETCD_KEY_FILE, ETCD_TRUSTED_CA_FILE, ETCD_CLIENT_CERT_AUTH): etcd refuses a flag and its variable together, and a member must keep its name, URLs and data dir"
	// +optional
	EtcdEnv []corev1.EnvVar `json:"etcdEnv,omitempty"`

	// persistentVolumeClaimSpec, when set, gives every member a PersistentVolumeClaim of this
	// spec for its data directory, so members keep their data when their pods are deleted or
	// their node restarts. Unset: members use emptyDir, and a member whose pod is gone is
	// replaced by a new member that copies the data from its peers.
	// Raising resources.requests.storage grows the members' volumes online, one at a time, where
	// the StorageClass allows expansion (else the cluster is Degraded with
	// VolumeExpansionUnsupported). Volumes never shrink: a request below a member's volume is
	// Degraded with InvalidSpec. Other changes apply to members created afterwards.
	// +kubebuilder:validation:XValidation:rule="has(self.resources) && has(self.resources.requests) && 'storage' in self.resources.requests",message="persistentVolumeClaimSpec.resources.requests.storage is required (the size of each member's volume)"
	// +kubebuilder:validation:XValidation:rule="!has(self.resources) || !has(self.resources.requests) || !('storage' in self.resources.requests) || !string(self.resources.requests['storage']).startsWith('-')",message="persistentVolumeClaimSpec.resources.requests.storage must not be negative"
	// +optional
	PersistentVolumeClaimSpec *corev1.PersistentVolumeClaimSpec `json:"persistentVolumeClaimSpec,omitempty"`

	// annotations are added to every member pod: at most 256 of them, with keys as label
	// keys are (the prefix may have upper-case letters) and, keys and values together, at most
	// 256 KiB, as Kubernetes requires of a pod's annotations.
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii().matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="pod annotation keys must be qualified names (as Kubernetes requires of annotations): an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, e.g. example.com/team"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 262144",message="pod annotations must not exceed 256 KiB, keys and values together (Kubernetes' limit for a pod)"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// busyboxImage is accepted for compatibility with coreos/etcd-operator and ignored: member
	// pods need no busybox init container here (the DNS wait runs inside the etcd container).
	// +optional
	BusyboxImage string `json:"busyboxImage,omitempty"`

	// securityContext is the pod-level security context of member pods (and of a restore's
	// seed pod). Unset: runAsNonRoot as user, group and fsGroup 65532 (fsGroupChangePolicy
	// OnRootMismatch) with the RuntimeDefault seccomp profile, which Pod Security "restricted"
	// admits; the data volume must support fsGroup (most CSI drivers and emptyDir do; hostPath
	// does not). Set: used as given, e.g. runAsUser: 0 to keep running etcd as root on volumes
	// written by root before. Applies to member pods created after a change.
	// Checked as for a pod: user and group IDs between 0 and 2147483647, fsGroupChangePolicy
	// OnRootMismatch or Always, seccompProfile and appArmorProfile of type RuntimeDefault,
	// Unconfined or Localhost (localhostProfile with Localhost only).
	// +kubebuilder:validation:XValidation:rule="(!has(self.runAsUser) || (self.runAsUser >= 0 && self.runAsUser <= 2147483647)) && (!has(self.runAsGroup) || (self.runAsGroup >= 0 && self.runAsGroup <= 2147483647)) && (!has(self.fsGroup) || (self.fsGroup >= 0 && self.fsGroup <= 2147483647))",message="securityContext: runAsUser, runAsGroup and fsGroup must be between 0 and 2147483647"
	// +kubebuilder:validation:XValidation:rule="!has(self.fsGroupChangePolicy) || self.fsGroupChangePolicy in ['OnRootMismatch', 'Always']",message="securityContext: fsGroupChangePolicy must be OnRootMismatch or Always"
	// +kubebuilder:validation:XValidation:rule="(!has(self.seccompProfile) || ((self.seccompProfile.type in ['RuntimeDefault', 'Unconfined', 'Localhost']) && (has(self.seccompProfile.localhostProfile) && size(self.seccompProfile.localhostProfile) > 0) == (self.seccompProfile.type == 'Localhost'))) && (!has(self.appArmorProfile) || ((self.appArmorProfile.type in ['RuntimeDefault', 'Unconfined', 'Localhost']) && (has(self.appArmorProfile.localhostProfile) && size(self.appArmorProfile.localhostProfile) > 0) == (self.appArmorProfile.type == 'Localhost')))",message="securityContext: seccompProfile.type and appArmorProfile.type must be RuntimeDefault, Unconfined or Localhost, and localhostProfile is set with Localhost and only then"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// containerSecurityContext is the security context of the etcd container and of a restore
	// seed's init containers. Unset: allowPrivilegeEscalation false, every capability dropped,
	// readOnlyRootFilesystem true (etcd writes only to its data volume) and the RuntimeDefault
	// seccomp profile. Not in coreos/etcd-operator. Checked as for a pod: user and group IDs
	// between 0 and 2147483647, procMount Default or Unmasked, profiles as in securityContext,
	// and allowPrivilegeEscalation false neither with privileged nor with CAP_SYS_ADMIN.
	// +kubebuilder:validation:XValidation:rule="(!has(self.runAsUser) || (self.runAsUser >= 0 && self.runAsUser <= 2147483647)) && (!has(self.runAsGroup) || (self.runAsGroup >= 0 && self.runAsGroup <= 2147483647))",message="containerSecurityContext: runAsUser and runAsGroup must be between 0 and 2147483647"
	// +kubebuilder:validation:XValidation:rule="!has(self.procMount) || self.procMount in ['Default', 'Unmasked']",message="containerSecurityContext: procMount must be Default or Unmasked"
	// +kubebuilder:validation:XValidation:rule="(!has(self.seccompProfile) || ((self.seccompProfile.type in ['RuntimeDefault', 'Unconfined', 'Localhost']) && (has(self.seccompProfile.localhostProfile) && size(self.seccompProfile.localhostProfile) > 0) == (self.seccompProfile.type == 'Localhost'))) && (!has(self.appArmorProfile) || ((self.appArmorProfile.type in ['RuntimeDefault', 'Unconfined', 'Localhost']) && (has(self.appArmorProfile.localhostProfile) && size(self.appArmorProfile.localhostProfile) > 0) == (self.appArmorProfile.type == 'Localhost')))",message="containerSecurityContext: seccompProfile.type and appArmorProfile.type must be RuntimeDefault, Unconfined or Localhost, and localhostProfile is set with Localhost and only then"
	// +kubebuilder:validation:XValidation:rule="!has(self.allowPrivilegeEscalation) || self.allowPrivilegeEscalation || ((!has(self.privileged) || !self.privileged) && (!has(self.capabilities) || !has(self.capabilities.add) || !('CAP_SYS_ADMIN' in self.capabilities.add)))",message="containerSecurityContext: allowPrivilegeEscalation cannot be false with privileged true or with capability CAP_SYS_ADMIN added"
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// DNSTimeoutInSecond is how long a new member waits for its own DNS name to resolve before
	// it gives up and its pod restarts. 0 (the default) waits indefinitely. The JSON name is
	// upper-case, as in coreos/etcd-operator.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	DNSTimeoutInSecond int64 `json:"DNSTimeoutInSecond,omitempty"`

	// ClusterDomain is the Kubernetes cluster domain used in member URLs, e.g. "cluster.local"
	// (a leading dot is accepted, as in coreos/etcd-operator). Unset: member URLs use the
	// namespace-qualified service name without a cluster domain
	// (<pod>.<cluster>.<namespace>.svc).
	// +kubebuilder:validation:Pattern=`^\.?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ClusterDomain string `json:"ClusterDomain,omitempty"`
}
