package v1beta2

import (
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
// +kubebuilder:printcolumn:name="Outdated",type=string,JSONPath=`.status.members.outdated`,description="Members whose pods run an older spec, being rolled"
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
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || has(oldSelf.bootstrap)",message="bootstrap is set only when the cluster is created: a running cluster is not restored by adding it (apply a new EtcdCluster with bootstrap.restore, or create an EtcdRestore)"
// +kubebuilder:validation:XValidation:rule="!has(self.recovery) || !has(self.pod) || !has(self.pod.persistentVolumeClaimSpec)",message="recovery is for clusters without volumes (emptyDir members): members with volumes keep their data and are brought back, never restored over"
// +kubebuilder:validation:XValidation:rule="!has(self.recovery) || !has(oldSelf.pod) || !has(oldSelf.pod.persistentVolumeClaimSpec)",message="recovery cannot be set in the update that removes pod.persistentVolumeClaimSpec: the running members still keep their data on volumes, which a recovery would restore over; remove persistentVolumeClaimSpec first, and set recovery once every member runs without a volume"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenance) || !has(self.maintenance.quotaBackendBytes) || !has(self.pod) || !has(self.pod.etcdEnv) || !self.pod.etcdEnv.exists(e, e.name == 'ETCD_QUOTA_BACKEND_BYTES')",message="maintenance.quotaBackendBytes and an ETCD_QUOTA_BACKEND_BYTES entry in pod.etcdEnv cannot both be set (etcd refuses a flag and its variable together): keep one"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenance) || !has(self.maintenance.autoCompaction) || !has(self.pod) || !has(self.pod.etcdEnv) || !self.pod.etcdEnv.exists(e, e.name.startsWith('ETCD_AUTO_COMPACTION_'))",message="maintenance.autoCompaction and ETCD_AUTO_COMPACTION_* entries in pod.etcdEnv cannot both be set (etcd refuses a flag and its variable together): keep one"
// +kubebuilder:validation:XValidation:rule="!has(self.survivorRecovery) || (has(self.pod) && has(self.pod.persistentVolumeClaimSpec))",message="survivorRecovery brings a cluster back from the data its surviving members keep on their volumes: only a cluster with pod.persistentVolumeClaimSpec has any (use recovery, from a backup, for emptyDir members)"
// +kubebuilder:validation:XValidation:rule="!has(self.hibernate) || !self.hibernate || (has(self.pod) && has(self.pod.persistentVolumeClaimSpec))",message="hibernate stops every member and keeps their data on their volumes: only a cluster with pod.persistentVolumeClaimSpec can hibernate (emptyDir members would lose everything)"
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
	// (e.g. "3.6.16"). Supported: 3.5.x and 3.6.x. Changing it moves the members one at a
	// time, followers first: 3.5 -> 3.6 from 3.5.26 or newer, and 3.6 -> 3.5 (to 3.5.26 or
	// newer) through etcd's downgrade API: the downgrade is enabled, every member migrates its
	// storage, then each member restarts on 3.5 (made again when its pod has flags 3.5 does not
	// know). Setting it back to 3.6 during a downgrade cancels it. Defaults to the newest
	// supported 3.6 release.
	// +kubebuilder:default="3.6.16"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$')",message="version must be an etcd release version such as 3.6.16"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^v?[0-9]+[.][0-9]+[.][0-9]+$') || self.matches('^v?3[.](5|6)[.][0-9]+$')",messageExpression="'etcd ' + self + ' is not supported: this operator runs etcd 3.5.x and 3.6.x' + (self.matches('^v?([0-2][.]|3[.][0-4][.])') ? '; versions below 3.5 are end of life, upgrade the cluster to 3.5 before moving it to this operator' : '')"
	// +kubebuilder:validation:XValidation:rule="!(oldSelf.matches('^v?3[.]6[.]') && self.matches('^v?3[.]5[.]([0-9]|1[0-9]|2[0-5])$'))",message="a 3.6 cluster downgrades to etcd 3.5.26 or newer only (e.g. 3.5.35)"
	// +optional
	Version string `json:"version,omitempty"`

	// paused stops the operator from changing anything in this cluster (no member added, removed,
	// replaced or upgraded) until it is set back to false. Status is still reported.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// hibernate puts the cluster to sleep: every member pod is stopped, while the members'
	// volumes, their identities (names, member IDs, the cluster ID) and the Services stay.
	// status.phase says Hibernated and condition Hibernated is True once no member runs.
	// Setting it back to false wakes the cluster: the same members start again on their data.
	// Clusters with volumes only (pod.persistentVolumeClaimSpec). Backups of a hibernated
	// cluster fail (there is nothing to read from).
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`

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
	// the cluster to size. Set only when the cluster is created, never changed; it may be
	// removed.
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

	// memberReplacement says when a voting member whose etcd stays unhealthy while the rest
	// of the cluster is healthy is replaced by a fresh one (its volume kept). On by default,
	// after 300 s; see MemberReplacementSpec.
	// +optional
	MemberReplacement *MemberReplacementSpec `json:"memberReplacement,omitempty"`

	// survivorRecovery, when set, lets the operator bring a cluster with volumes back from its
	// surviving minority once the volumes of a majority of its members are gone: the survivor
	// with the newest data is restarted alone with --force-new-cluster and the cluster grows
	// back from it. Off by default; see SurvivorRecoverySpec and docs/runbooks/quorum-loss.md.
	// +optional
	SurvivorRecovery *SurvivorRecoverySpec `json:"survivorRecovery,omitempty"`
}

// BootstrapSpec says how the first member of a cluster is made.
type BootstrapSpec struct {
	// restore marks a cluster whose members are built from a backup instead of starting
	// empty. With restore.source set, the etcd operator builds every member from that backup
	// itself (disaster recovery by applying a manifest); without it, the restore operator
	// seeds the members (the form EtcdRestores of earlier releases made). Either way the etcd
	// operator creates no empty seed of its own, and manages the members like any others once
	// the cluster formed on the restored data.
	// +optional
	Restore *RestoreBootstrap `json:"restore,omitempty"`
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

	// lastDefragmentRequest is the value of the etcd.database.coreos.com/defragment-requested-at
	// annotation whose defragmentation round finished last: a request is handled once this
	// equals the annotation's value.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastDefragmentRequest string `json:"lastDefragmentRequest,omitempty"`

	// defragmentRequest is the round requested with that annotation that has not finished:
	// pending (running, or waiting for a healthy cluster) or refused. Unset when the
	// annotation's value was handled, or there is none.
	// +optional
	DefragmentRequest *DefragmentRequestStatus `json:"defragmentRequest,omitempty"`

	// lastRevision is the highest store revision a member reported in the last pass that
	// reached one (the measure of what an automatic recovery lost).
	// +optional
	LastRevision int64 `json:"lastRevision,omitempty"`

	// TLS, on a cluster with TLS.auto, is which CAs its members trust and the step of a CA
	// rotation under way.
	// +optional
	TLS *TLSStatus `json:"TLS,omitempty"`

	// restore, on a cluster built from bootstrap.restore.source, is what the etcd operator
	// restored and verified.
	// +optional
	Restore *ClusterRestoreStatus `json:"restore,omitempty"`

	// lastRecovery, on a cluster that spec.recovery restored, says which restore did it and
	// how much data was lost.
	// +optional
	LastRecovery *RecoveryRecord `json:"lastRecovery,omitempty"`

	// lastSurvivorRecovery, on a cluster that spec.survivorRecovery brought back from a
	// surviving member, says which member was kept, at which revision, and why.
	// +optional
	LastSurvivorRecovery *SurvivorRecoveryRecord `json:"lastSurvivorRecovery,omitempty"`

	// replacedVolumes are the kept volumes of members the operator replaced
	// (spec.memberReplacement): no member uses them; delete one when you no longer need its
	// data.
	// +optional
	ReplacedVolumes []ReplacedVolume `json:"replacedVolumes,omitempty"`
}

// MembersStatus lists members by readiness.
type MembersStatus struct {
	// ready are the members that serve requests.
	// +optional
	Ready []string `json:"ready,omitempty"`
	// unready are the members that do not serve requests (starting, learning, or failed).
	// +optional
	Unready []string `json:"unready,omitempty"`
	// outdated are the members whose pods were made from an older spec (spec.pod, TLS,
	// maintenance flags, repository: anything but the version, which upgrades move in place):
	// the operator rolls them one at a time (condition Rolling). Pods made before the operator
	// recorded the spec they came from are not listed.
	// +optional
	Outdated []string `json:"outdated,omitempty"`
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
	// nodeName is the node the member's pod was last seen on, kept once the pod is gone:
	// automatic recovery (spec.recovery) does not restore over a member whose pod was deleted
	// while that node is not Ready, since its etcd may still run there behind a partition.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`
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
	// ClusterPhaseHibernated: spec.hibernate stopped the members (or is stopping them).
	ClusterPhaseHibernated ClusterPhase = "Hibernated"
)

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
