package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// DefaultRepository is the image repository etcd member pods use when spec.repository is empty.
	// The image is <repository>:v<version>, as in coreos/etcd-operator.
	DefaultRepository = "quay.io/coreos/etcd"
	// DefaultEtcdVersion is the etcd version of a cluster whose spec.version is empty: the newest
	// supported 3.6 patch release.
	DefaultEtcdVersion = "3.6.16"
)

// EtcdCluster runs an etcd cluster: a seed member first, then members added one at a time
// through the etcd membership API until spec.size members are started and voting.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=etcd;etcdcluster,categories=etcd-operator
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired number of members"
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.readyMembers`,description="Members that are started, voting and healthy"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`,description="Version every member runs"
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`,description="The member that is the raft leader"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition: the object reached the state its spec asks for"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is (not) Ready",priority=1
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter, no dots): it names the cluster's Services and member pods"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56",message="metadata.name must be at most 56 characters: the client Service <name>-client and the member pods <name>-<n> must fit in 63"
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the etcd cluster.
	// +required
	Spec ClusterSpec `json:"spec"`
	// status is the observed state of the etcd cluster, written by the etcd operator only.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec is the desired state of an etcd cluster. Field names are those of
// coreos/etcd-operator v0.9.4, so its manifests apply unchanged.
//
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(oldSelf.bootstrap) || self.bootstrap == oldSelf.bootstrap",message="bootstrap is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(self.recovery) || !has(self.pod) || !has(self.pod.persistentVolumeClaimSpec)",message="recovery is for clusters without volumes (emptyDir members): members with volumes keep their data and are brought back, never restored over"
// +kubebuilder:validation:XValidation:rule="!has(self.recovery) || !has(oldSelf.pod) || !has(oldSelf.pod.persistentVolumeClaimSpec)",message="recovery cannot be set in the update that removes pod.persistentVolumeClaimSpec: the running members still keep their data on volumes, which a recovery would restore over; remove persistentVolumeClaimSpec first, and set recovery once every member runs without a volume"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenance) || !has(self.maintenance.quotaBackendBytes) || !has(self.pod) || !has(self.pod.etcdEnv) || !self.pod.etcdEnv.exists(e, e.name == 'ETCD_QUOTA_BACKEND_BYTES')",message="maintenance.quotaBackendBytes and an ETCD_QUOTA_BACKEND_BYTES entry in pod.etcdEnv cannot both be set (etcd refuses a flag and its variable together): keep one"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenance) || !has(self.maintenance.autoCompaction) || !has(self.pod) || !has(self.pod.etcdEnv) || !self.pod.etcdEnv.exists(e, e.name.startsWith('ETCD_AUTO_COMPACTION_'))",message="maintenance.autoCompaction and ETCD_AUTO_COMPACTION_* entries in pod.etcdEnv cannot both be set (etcd refuses a flag and its variable together): keep one"
type ClusterSpec struct {
	// size is the number of members the cluster should have. The operator adds or removes one
	// member at a time until the cluster has this many started, voting members.
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 7",message="size must be between 1 and 7: etcd needs at least one member, and more than 7 slow consensus down (use an odd number: 3 or 5 tolerate 1 or 2 failures)"
	// +required
	Size int32 `json:"size"`

	// repository is the image repository of the etcd image; member pods run
	// <repository>:v<version>. It must carry the same tags as the official etcd releases.
	// Defaults to quay.io/coreos/etcd.
	// +kubebuilder:default="quay.io/coreos/etcd"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*$')",message="repository must be an image repository without tag or digest, e.g. quay.io/coreos/etcd or registry.example.com:5000/etcd (lower-case path, no spaces): the operator adds :v<version>"
	// +optional
	Repository string `json:"repository,omitempty"`

	// version is the etcd release to run, as MAJOR.MINOR.PATCH with an optional leading "v"
	// (e.g. "3.6.16"). Supported: 3.5.x and 3.6.x. Changing it upgrades the members one at a
	// time (3.5 -> 3.6); downgrades are refused. Defaults to the newest supported 3.6 release.
	// +kubebuilder:default="3.6.16"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$')",message="version must be an etcd release version such as 3.6.16"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || self.matches('^v?3[.](5|6)[.][0-9]+$')",messageExpression="'etcd ' + self + ' is not supported: this operator runs etcd 3.5.x and 3.6.x' + (self.matches('^v?([0-2][.]|3[.][0-4][.])') ? '; versions below 3.5 are end of life, upgrade the cluster to 3.5 before moving it to this operator' : '')"
	// +kubebuilder:validation:XValidation:rule="!(oldSelf.matches('^v?3[.]6[.]') && self.matches('^v?3[.]5[.]'))",message="downgrading etcd from 3.6 to 3.5 is not supported: restore a 3.5 backup into a new cluster instead"
	// +optional
	Version string `json:"version,omitempty"`

	// paused stops the operator from changing anything in this cluster (no member added, removed,
	// replaced or upgraded) until it is set back to false. Status is still reported.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// pod is the policy for the member pods the operator creates. Changes apply to pods created
	// after the change (new or replaced members), not to running ones.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`

	// TLS configures TLS for peer and client traffic. The JSON name is upper-case, as in
	// coreos/etcd-operator.
	// +optional
	TLS *TLSPolicy `json:"TLS,omitempty"`

	// auth runs the cluster with etcd authentication: the operator creates the user named in
	// the Secret with its password, grants it etcd's root role and enables authentication once
	// the cluster is Available, and every operator (members, backups, restores, drills)
	// authenticates with these credentials. A cluster whose authentication is already enabled
	// (by a person, or restored from a backup that had it) is only authenticated against.
	// Unset: the operators use no credentials.
	// +optional
	Auth *AuthPolicy `json:"auth,omitempty"`

	// bootstrap says how the cluster's first member is made. Unset: a new, empty seed member.
	// The restore operator sets bootstrap.restore on the clusters it seeds from a backup; this
	// is the explicit handshake by which the etcd operator adopts the seeded member and grows
	// the cluster to size. Set once, never changed.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// maintenance is the upkeep of the members' storage: backend quota, automatic compaction,
	// defragmentation, NOSPACE recovery. Unset: the defaults of MaintenanceSpec.
	// +optional
	Maintenance *MaintenanceSpec `json:"maintenance,omitempty"`

	// recovery, when set, lets the operator restore the cluster from its newest scheduled
	// backup once quorum is lost and every member's data is gone (clusters without volumes
	// only). Off by default; see RecoverySpec and docs/runbooks/quorum-loss.md.
	// +optional
	Recovery *RecoverySpec `json:"recovery,omitempty"`
}

// BootstrapSpec says how the first member of a cluster is made.
type BootstrapSpec struct {
	// restore marks a cluster whose members are made by the restore operator from a backup.
	// The etcd operator creates no seed of its own: it waits until the seed member named here
	// runs on the restored data, then manages the members like any others (adding members
	// until spec.size when fewer were restored).
	// +optional
	Restore *RestoreBootstrap `json:"restore,omitempty"`
}

// RestoreBootstrap names the EtcdRestore that seeds a cluster and its seed member.
// +kubebuilder:validation:XValidation:rule="!has(self.members) || self.seedMember in self.members",message="members, when set, must include seedMember"
type RestoreBootstrap struct {
	// restoreName is the name of the EtcdRestore (in the same namespace) that seeds this cluster.
	// +kubebuilder:validation:MinLength=1
	// +required
	RestoreName string `json:"restoreName"`
	// seedMember is the name of the seed member's pod, which the restore operator creates.
	// +kubebuilder:validation:MinLength=1
	// +required
	SeedMember string `json:"seedMember"`
	// members are the names of every member the restore operator restores from the backup at
	// once, seedMember among them: each member's pod fetches and verifies the backup and runs
	// etcdutl snapshot restore with the same initial cluster, so the cluster forms with every
	// member holding the data (etcd's own disaster-recovery procedure) instead of replicating
	// it through raft once per added member. Empty: seedMember alone is restored and the etcd
	// operator adds the other members (clusters restored before members existed).
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:MinLength=1
	// +listType=set
	// +optional
	Members []string `json:"members,omitempty"`
}

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

// ClusterStatus is the observed state of an etcd cluster.
type ClusterStatus struct {
	// observedGeneration is the spec generation the status was last fully reconciled for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary for display (Creating, Running, Scaling, Upgrading,
	// Degraded, Failed, Paused), derived from the conditions. Automation should read conditions.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// reason explains the phase in a few words (coreos/etcd-operator field).
	// +optional
	Reason string `json:"reason,omitempty"`

	// controlPaused is true while spec.paused stops the operator (coreos/etcd-operator field).
	// +optional
	ControlPaused bool `json:"controlPaused,omitempty"`

	// conditions: Ready (with Reconciling or Stalled while it is False, the kstatus
	// conventions), Available, Progressing, Scaling, Upgrading, Degraded, Paused. See the
	// Condition* and Reason* constants for their meaning.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// size is the number of members in the etcd member list.
	// +optional
	Size int32 `json:"size,omitempty"`

	// readyMembers is the number of members that are started, voting and healthy.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`

	// selector is the label selector of member pods, for the /scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// serviceName is the name of the Service clients connect to (<cluster>-client).
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// clientPort is the port of the client Service.
	// +optional
	ClientPort int32 `json:"clientPort,omitempty"`

	// members lists the members by readiness; member names are their pod names.
	// +optional
	Members MembersStatus `json:"members,omitempty"`

	// currentVersion is the etcd version every member runs, or the lowest one during an upgrade.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// targetVersion is the version an upgrade in progress moves to; empty when not upgrading.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`

	// clusterID is the etcd cluster ID, in hex.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// leader is the name of the member that is the raft leader, as the members that answered
	// last reported it; empty when no member answers.
	// +optional
	Leader string `json:"leader,omitempty"`

	// lastDefragmentationRound is when the last scheduled defragmentation round
	// (spec.maintenance.defragmentation.schedule) finished; the next round is the schedule's
	// next time after it.
	// +optional
	LastDefragmentationRound *metav1.Time `json:"lastDefragmentationRound,omitempty"`

	// lastRevision is the highest store revision a member reported in the last pass that
	// reached one (the measure of what an automatic recovery lost).
	// +optional
	LastRevision int64 `json:"lastRevision,omitempty"`

	// lastRecovery, on a cluster that spec.recovery restored, says which restore did it and
	// how much data was lost.
	// +optional
	LastRecovery *RecoveryRecord `json:"lastRecovery,omitempty"`
}

// MembersStatus lists members by readiness.
type MembersStatus struct {
	// ready are the members that serve requests.
	// +optional
	Ready []string `json:"ready,omitempty"`
	// unready are the members that do not serve requests (starting, learning, or failed).
	// +optional
	Unready []string `json:"unready,omitempty"`
	// details describes every member in etcd's member list as the operator last observed it,
	// sorted by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Details []MemberStatus `json:"details,omitempty"`
}

// MemberRole is a member's role in raft.
// +kubebuilder:validation:Enum=Leader;Follower;Learner;Unknown
type MemberRole string

// Member roles.
const (
	MemberRoleLeader   MemberRole = "Leader"
	MemberRoleFollower MemberRole = "Follower"
	MemberRoleLearner  MemberRole = "Learner"
	// MemberRoleUnknown: the member did not answer and is not a learner.
	MemberRoleUnknown MemberRole = "Unknown"
)

// MemberStatus is what the operator last observed of one etcd member.
type MemberStatus struct {
	// name is the member's name, which is its pod name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// id is the etcd member ID, in hex.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	ID string `json:"id,omitempty"`
	// role is Leader, Follower, Learner, or Unknown when the member did not answer.
	// +optional
	Role MemberRole `json:"role,omitempty"`
	// version is the etcd version the member reports.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
	// dbSize is the size of the member's backend database file in bytes (etcd's dbSize, which
	// the backend quota limits).
	// +optional
	DBSize int64 `json:"dbSize,omitempty"`
	// dbSizeInUse is the part of dbSize that holds data, in bytes; the rest is free pages that
	// a defragmentation would give back.
	// +optional
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`
	// healthy is true when the member answered its status at its own URL and reports no
	// errors (an alarm such as NOSPACE is an error).
	Healthy bool `json:"healthy"`
	// lastError is why the member is not healthy: the error of the status call, or the errors
	// the member reports. Empty when healthy.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LastError string `json:"lastError,omitempty"`
	// lastDefragmentationTime is when the operator last defragmented the member.
	// +optional
	LastDefragmentationTime *metav1.Time `json:"lastDefragmentationTime,omitempty"`
}

// ClusterPhase is a one-word summary of a cluster's state for display.
type ClusterPhase string

// Cluster phases, for display only.
const (
	ClusterPhaseNone      ClusterPhase = ""
	ClusterPhaseCreating  ClusterPhase = "Creating"
	ClusterPhaseRunning   ClusterPhase = "Running"
	ClusterPhaseScaling   ClusterPhase = "Scaling"
	ClusterPhaseUpgrading ClusterPhase = "Upgrading"
	ClusterPhaseDegraded  ClusterPhase = "Degraded"
	ClusterPhaseFailed    ClusterPhase = "Failed"
	ClusterPhasePaused    ClusterPhase = "Paused"
)

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
