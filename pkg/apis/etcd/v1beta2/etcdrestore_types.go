package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdRestore makes an etcd cluster from a backup. The backup is checked first (it exists, its
// size and checksum match, it is a valid snapshot), then everything the seed member needs
// (preflight: agent image, etcd version, credentials, storage class, volume quota, and for an
// in-place restore a check Job restoring the backup once in the members' containers);
// only then is the target cluster replaced or created. One EtcdRestore per cluster runs at a
// time: a later one waits. The restore operator seeds the first member from the snapshot (a
// pod controlled by the EtcdCluster), the etcd operator grows the cluster to size, and the
// restore succeeds only once the cluster is Available and holds the backup's revision.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=etcdrestore,categories=etcd-operator
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.etcdCluster.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition: the object reached the state its spec asks for"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is (not) Ready"
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.restoredRevision`
// +kubebuilder:printcolumn:name="Verified",type=boolean,JSONPath=`.status.verification.passed`,description="Keyspace hash and key count matched on every member"
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.duration`,description="Time to restore (RTO)"
// +kubebuilder:printcolumn:name="Backup Age",type=string,JSONPath=`.status.backupAge`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which backup to restore into which cluster. It is immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an EtcdRestore's spec is immutable: delete it and create a new one"
	// +required
	Spec RestoreSpec `json:"spec"`
	// status records progress and outcome, written by the restore operator only.
	// +optional
	Status RestoreStatus `json:"status,omitempty"`
}

// RestoreSpec says which backup to restore into which cluster. Field names are those of
// coreos/etcd-operator v0.9.4; clusterTemplate, backupRef, backupScheduleRef and
// backupSelection are extensions.
//
// +kubebuilder:validation:XValidation:rule="(has(self.backupStorageType) ? 1 : 0) + (has(self.backupRef) ? 1 : 0) + (has(self.backupScheduleRef) ? 1 : 0) == 1",message="name the backup in exactly one way: backupStorageType with its s3/abs/gcs/oss block, backupRef (an EtcdBackup), or backupScheduleRef (the newest successful backup of an EtcdBackupSchedule)"
// +kubebuilder:validation:XValidation:rule="has(self.backupStorageType) || (!has(self.s3) && !has(self.abs) && !has(self.gcs) && !has(self.oss) && !has(self.pvc))",message="s3, abs, gcs, oss and pvc go with backupStorageType; with backupRef or backupScheduleRef the location comes from the backup"
// +kubebuilder:validation:XValidation:rule="!has(self.backupStorageType) || self.backupStorageType != 'S3' || has(self.s3)",message="backupStorageType S3 needs the s3 block (path, and awsSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="!has(self.backupStorageType) || self.backupStorageType != 'ABS' || has(self.abs)",message="backupStorageType ABS needs the abs block (path, and absSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="!has(self.backupStorageType) || self.backupStorageType != 'GCS' || has(self.gcs)",message="backupStorageType GCS needs the gcs block (path, and gcpSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="!has(self.backupStorageType) || self.backupStorageType != 'OSS' || has(self.oss)",message="backupStorageType OSS needs the oss block (path and ossSecret)"
// +kubebuilder:validation:XValidation:rule="!has(self.backupStorageType) || self.backupStorageType != 'PVC' || has(self.pvc)",message="backupStorageType PVC needs the pvc block (claimName and path)"
// +kubebuilder:validation:XValidation:rule="(has(self.s3) ? 1 : 0) + (has(self.abs) ? 1 : 0) + (has(self.gcs) ? 1 : 0) + (has(self.oss) ? 1 : 0) + (has(self.pvc) ? 1 : 0) <= 1",message="set only one of s3, abs, gcs, oss and pvc: the one backupStorageType names"
// +kubebuilder:validation:XValidation:rule="(!has(self.s3) || has(self.s3.path)) && (!has(self.abs) || has(self.abs.path)) && (!has(self.gcs) || has(self.gcs.path)) && (!has(self.oss) || has(self.oss.path))",message="the storage block needs a path: <bucket>/<key>"
// +kubebuilder:validation:XValidation:rule="!has(self.clusterTemplate) || self.clusterTemplate.name != self.etcdCluster.name",message="clusterTemplate must name another cluster than etcdCluster: leave it unset to replace etcdCluster in place"
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecondsAfterFinished) || has(self.clusterTemplate)",message="ttlSecondsAfterFinished deletes the restored cluster, so it is allowed only for a restore into a scratch cluster (clusterTemplate set), never for a cluster restored in place"
type RestoreSpec struct {
	// etcdCluster names the cluster to restore into. If an EtcdCluster of that name exists, it
	// is the template (size, version, pod policy, TLS) and is replaced once the backup and the
	// preflight checks passed (its volumes are kept until the restored cluster is verified);
	// otherwise clusterTemplate must name the template. While another EtcdRestore of the same
	// etcdCluster that came first has not finished, this one waits (RestoreInProgress).
	// +required
	// +kubebuilder:validation:XValidation:rule="self.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.name) <= 56",message="etcdCluster.name must be a DNS-1035 label of at most 56 characters (lower-case letters, digits and '-', starting with a letter): it names the restored cluster's Services and member pods"
	EtcdCluster EtcdClusterRef `json:"etcdCluster"`

	// clusterTemplate names an existing EtcdCluster whose spec the restored cluster copies,
	// when etcdCluster names a new cluster: a restore drill into a scratch name that leaves the
	// template cluster untouched.
	// +optional
	ClusterTemplate *EtcdClusterRef `json:"clusterTemplate,omitempty"`

	// backupStorageType is the kind of object store that holds the backup: S3, ABS, GCS or OSS,
	// or PVC (a PersistentVolumeClaim of this namespace). The block of the same name says where.
	// +optional
	BackupStorageType BackupStorageType `json:"backupStorageType,omitempty"`

	// BackupSource holds the s3, abs, gcs or oss block (coreos/etcd-operator's RestoreSource, which
	// has the same fields).
	BackupSource `json:",inline"`

	// backupSelection says how the block's path is read. Exact (default): path is the backup
	// object. Newest: path is a prefix, and the newest backup under it of the cluster this restore
	// names (same namespace and etcdCluster.name; for a drill, else its clusterTemplate's) is
	// restored; other clusters' backups under the same prefix are never chosen.
	// +kubebuilder:default=Exact
	// +optional
	BackupSelection BackupSelection `json:"backupSelection,omitempty"`

	// backupRef names a successful EtcdBackup in this namespace to restore; its recorded
	// location, size and checksum are used and checked.
	// +optional
	BackupRef *LocalObjectReference `json:"backupRef,omitempty"`

	// backupScheduleRef names an EtcdBackupSchedule in this namespace; its newest successful
	// backup is restored.
	// +optional
	BackupScheduleRef *LocalObjectReference `json:"backupScheduleRef,omitempty"`

	// revisionBump is how far the restored cluster's revision is raised above the backup's
	// (etcdutl snapshot restore --bump-revision, with --mark-compacted): a client that saw a
	// revision newer than the backup (a Kubernetes API server's watch cache, any etcd watcher)
	// is told its revision is compacted and lists again, instead of silently missing the writes
	// the backup lacks while it waits for revisions it has already seen. Unset: 1000000000, etcd's
	// recommendation for Kubernetes. 0 restores the backup's revisions as they were (clients
	// may then see revision numbers again that they saw before, with other data).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000000
	// +optional
	RevisionBump *int64 `json:"revisionBump,omitempty"`

	// pointInTime restores the keyspace as it was at a revision or a time after the backup,
	// by replaying onto it the continuous capture stored next to it (as
	// bootstrap.restore.source.pointInTime does; {} is the newest revision captured). The
	// point is resolved to one revision while the backup is verified, before any cluster is
	// touched: a point the capture does not hold fails the restore (NotCaptured) with the
	// cluster as it was, and an in-place restore's check replays to it too. The backup is the
	// one the restore names otherwise (backupRef, backupScheduleRef, the storage block), and
	// must be from before the point.
	// +optional
	PointInTime *PointInTime `json:"pointInTime,omitempty"`

	// ttlSecondsAfterFinished, for a restore into a scratch cluster (clusterTemplate set), deletes
	// the restored EtcdCluster (and so its pods and volumes) this many seconds after the restore
	// finished, successfully or not: a restore drill that cleans up after itself. The EtcdRestore
	// stays as the drill's record. Not allowed for a cluster restored in place.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2592000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// BackupSelection says how a restore reads the path of its storage block.
//
// +kubebuilder:validation:Enum=Exact;Newest
type BackupSelection string

// Backup selections.
const (
	BackupSelectionExact  BackupSelection = "Exact"
	BackupSelectionNewest BackupSelection = "Newest"
)

// RestoreStatus reports a restore's progress and outcome. succeeded and reason are the fields
// of coreos/etcd-operator v0.9.4.
type RestoreStatus struct {
	// succeeded is true once the restored cluster is Available and holds the backup's revision.
	// +optional
	Succeeded bool `json:"succeeded,omitempty"`

	// reason explains a failure.
	// +optional
	Reason string `json:"reason,omitempty"`

	// observedGeneration is the spec generation this status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary for display: Pending, Verifying, Seeding, Growing,
	// Succeeded, Failed.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`

	// conditions: Ready (with Reconciling or Stalled while it is False, the kstatus
	// conventions), BackupVerified, Seeded, Complete, Failed. See the Condition* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// source is the backup object this restore verified and restores, pinned by the size and
	// sha256 it read: where it is (storage type, bucket, exact key, endpoint, Secrets), exactly
	// as written into the restored cluster's spec.bootstrap.restore.source. It is set once, when
	// the backup verified; the members fetch exactly that object, even if the EtcdBackup or
	// schedule that named it is gone by then.
	// +optional
	Source *RestoreSource `json:"source,omitempty"`

	// backupLocation is the object restored, as <storageType>://<bucket>/<key>.
	// +optional
	BackupLocation string `json:"backupLocation,omitempty"`

	// backupSize is the size in bytes of the object restored.
	// +optional
	BackupSize int64 `json:"backupSize,omitempty"`

	// backupSHA256 is the hex SHA-256 of the object restored.
	// +optional
	BackupSHA256 string `json:"backupSHA256,omitempty"`

	// backupRevision is the etcd revision the backup holds.
	// +optional
	BackupRevision int64 `json:"backupRevision,omitempty"`

	// pointInTime is the revision spec.pointInTime was resolved to when the backup was
	// verified; the restored cluster replays the capture to exactly that revision.
	// +optional
	PointInTime *RestoredPoint `json:"pointInTime,omitempty"`

	// restoredRevision is the revision the restored cluster reported when it became Available;
	// at least backupRevision.
	// +optional
	RestoredRevision int64 `json:"restoredRevision,omitempty"`

	// startTime is when the restore started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the restore succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// duration is completionTime - startTime: the time to restore (RTO).
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// backupTime is when the restored backup was taken: its EtcdBackup's completion time, or
	// the time in the object's key.
	// +optional
	BackupTime *metav1.Time `json:"backupTime,omitempty"`

	// backupAge is how old the backup was when the restore started: at most the writes a
	// disaster at that moment would have lost (the recovery point).
	// +optional
	BackupAge *metav1.Duration `json:"backupAge,omitempty"`

	// seedMember is the name of the member pod seeded from the backup: <cluster>-<n>, n one
	// above the highest index of any pod or volume of the cluster's name when it was created.
	// +optional
	SeedMember string `json:"seedMember,omitempty"`

	// verification is what was checked on the restored cluster before it was reported
	// successful.
	// +optional
	Verification *RestoreVerification `json:"verification,omitempty"`

	// clusterDeletedTime is when the scratch cluster of a drill was deleted after
	// ttlSecondsAfterFinished (or, for a drill that made no cluster, when its TTL ran out:
	// nothing is deleted then).
	// +optional
	ClusterDeletedTime *metav1.Time `json:"clusterDeletedTime,omitempty"`

	// retainedVolumes are the PersistentVolumeClaims of the cluster an in-place restore replaced.
	// Before deleting that cluster the restore operator takes its controller reference off
	// them and gives them no owner (annotations etcd.database.coreos.com/retained-by and
	// restore-uid), so they outlive both the cluster and this EtcdRestore; they are deleted
	// once the restored cluster is verified, and kept when the restore fails or this
	// EtcdRestore is deleted before it finished (then delete them yourself).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RetainedVolumes []string `json:"retainedVolumes,omitempty"`
}

// RestoreVerification is what the restore operator checked on a restored cluster.
type RestoreVerification struct {
	// revision is the revision checked: the newest revision in the backup.
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// keys is the number of keys at revision, equal on every member.
	// +optional
	Keys int64 `json:"keys,omitempty"`

	// hash is the keyspace hash (etcd HashKV) at revision, computed by the seed member on the
	// restored data before any other member joined.
	// +optional
	Hash int64 `json:"hash,omitempty"`

	// snapshotHash is the keyspace hash at revision computed offline from the restored data
	// file, before any member started on it (etcd's HashKV algorithm, run by the restore agent on
	// the file at rest; etcd 3.5 and 3.6, leases and authentication included). When set it must
	// equal hash.
	// +optional
	SnapshotHash int64 `json:"snapshotHash,omitempty"`

	// membersVerified is the number of members whose hash and key count at revision equal the
	// seed's.
	// +optional
	MembersVerified int32 `json:"membersVerified,omitempty"`

	// passed is true when every member matched and the cluster's revision is at least revision.
	// +optional
	Passed bool `json:"passed,omitempty"`
}

// DefaultRevisionBump is RestoreSpec.revisionBump when unset: etcd's recommendation for the
// etcd of a Kubernetes cluster, far above the writes any cluster makes between two backups.
const DefaultRevisionBump = 1_000_000_000

// RestorePhase is a one-word summary of a restore for display.
type RestorePhase string

// Restore phases, for display only.
const (
	RestorePhasePending   RestorePhase = "Pending"
	RestorePhaseVerifying RestorePhase = "Verifying"
	RestorePhaseSeeding   RestorePhase = "Seeding"
	RestorePhaseGrowing   RestorePhase = "Growing"
	RestorePhaseSucceeded RestorePhase = "Succeeded"
	RestorePhaseFailed    RestorePhase = "Failed"
)

// EtcdRestoreList is a list of EtcdRestores.
//
// +kubebuilder:object:root=true
type EtcdRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdRestore `json:"items"`
}
