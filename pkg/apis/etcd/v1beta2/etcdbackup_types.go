package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdBackup takes a snapshot of an etcd cluster and streams it into an object store, verified
// against etcd's own checksum before it counts. Without backupPolicy.backupIntervalInSecond it
// runs once; with it, it runs periodically (coreos/etcd-operator semantics). For cron schedules
// use EtcdBackupSchedule.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=etcdbackup;etcdbk,categories=etcd-operator
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.etcdCluster.name`,description="The EtcdCluster backed up (empty for etcdEndpoints)"
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storageType`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition: the object reached the state its spec asks for"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is (not) Ready"
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.etcdRevision`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`,description="Bytes stored"
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessDate`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which cluster to back up and where to. It is immutable: a backup is a record.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an EtcdBackup's spec is immutable: create a new EtcdBackup instead (or use an EtcdBackupSchedule for backups whose settings change)"
	// +required
	Spec BackupSpec `json:"spec"`
	// status records the outcome, written by the backup operator only.
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// BackupSpec says which cluster to back up and where to put the snapshot. Field names are
// those of coreos/etcd-operator v0.9.4.
//
// +kubebuilder:validation:XValidation:rule="(has(self.etcdEndpoints) && size(self.etcdEndpoints) > 0) != has(self.etcdCluster)",message="set exactly one of etcdEndpoints (the members' client URLs) and etcdCluster (the name of an EtcdCluster in this namespace)"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || has(self.s3)",message="storageType S3 needs the s3 block (path, and awsSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'ABS' || has(self.abs)",message="storageType ABS needs the abs block (path, and absSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'GCS' || has(self.gcs)",message="storageType GCS needs the gcs block (path, and gcpSecret or ambient credentials)"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'OSS' || has(self.oss)",message="storageType OSS needs the oss block (path and ossSecret)"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PVC' || has(self.pvc)",message="storageType PVC needs the pvc block (claimName and path)"
// +kubebuilder:validation:XValidation:rule="(has(self.s3) ? 1 : 0) + (has(self.abs) ? 1 : 0) + (has(self.gcs) ? 1 : 0) + (has(self.oss) ? 1 : 0) + (has(self.pvc) ? 1 : 0) <= 1",message="set only one of s3, abs, gcs, oss and pvc: the one storageType names"
// +kubebuilder:validation:XValidation:rule="(!has(self.s3) || has(self.s3.path)) && (!has(self.abs) || has(self.abs.path)) && (!has(self.gcs) || has(self.gcs.path)) && (!has(self.oss) || has(self.oss.path))",message="the storage block needs a path: <bucket>/<key>"
type BackupSpec struct {
	// etcdEndpoints are client URLs of the cluster's members. The backup is taken from exactly
	// one of them: the healthy member with the highest revision.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^https?://[^/]+$')",message="each etcd endpoint must be a URL like http://my-cluster-client:2379"
	// +kubebuilder:validation:items:XValidation:rule="!self.matches('^https?://[^/]*@')",message="an etcd endpoint must not carry credentials (user:password@host)"
	// +listType=atomic
	// +optional
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`

	// etcdCluster names an EtcdCluster in this namespace to back up, instead of etcdEndpoints.
	// Its members, its TLS settings (TLS.static.operatorSecret) and its credentials
	// (auth.secretName) are used.
	// +optional
	EtcdCluster *EtcdClusterRef `json:"etcdCluster,omitempty"`

	// storageType is the kind of object store: S3, ABS, GCS or OSS, or PVC for a
	// PersistentVolumeClaim of this namespace. The block of the same name (s3, abs, gcs, oss,
	// pvc) says where.
	// +required
	StorageType BackupStorageType `json:"storageType"`

	// backupPolicy configures timeouts, periodic backups and how many of them to keep.
	// +optional
	BackupPolicy *BackupPolicy `json:"backupPolicy,omitempty"`

	// BackupSource holds the s3, abs, gcs, oss or pvc block.
	BackupSource `json:",inline"`

	// compression compresses the backup (and, for a schedule's template, its continuous-capture
	// segments) with zstd while it streams, before any encryption: None (default) or Zstd.
	// Reading needs no setting: a compressed object is recognised by its first bytes, and
	// `zstd -d` decompresses it by hand.
	// +optional
	Compression BackupCompression `json:"compression,omitempty"`

	// clientTLSSecret is the Secret with the client certificate for etcdEndpoints that serve
	// TLS: etcd-client.crt, etcd-client.key, etcd-client-ca.crt.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ClientTLSSecret string `json:"clientTLSSecret,omitempty"`

	// auth names the Secret with the etcd user and password for etcdEndpoints whose cluster
	// runs with authentication (auth.secretName: username, default root, and password), as
	// EtcdCluster's auth does. The user needs the root role (etcd serves snapshots to it only).
	// For etcdCluster the cluster's own auth is used instead.
	// +optional
	Auth *AuthPolicy `json:"auth,omitempty"`

	// pathType says how the key in the storage path names the object. Key (the default for a
	// one-shot backup, as in coreos/etcd-operator): the object is written to exactly that key.
	// Prefix: the key is a prefix, and the object is <key>_<UTC time 20060102T150405Z>_v<etcd
	// revision, 20 digits>. Periodic backups always use Prefix; EtcdBackupSchedules set Prefix
	// on the backups they create.
	// +optional
	PathType BackupPathType `json:"pathType,omitempty"`
}

// BackupPathType says how a storage path's key names the backup object.
//
// +kubebuilder:validation:Enum=Key;Prefix
type BackupPathType string

// Path types.
const (
	BackupPathKey    BackupPathType = "Key"
	BackupPathPrefix BackupPathType = "Prefix"
)

// BackupPolicy configures a backup's timeout and, for periodic backups, interval and retention.
type BackupPolicy struct {
	// timeoutInSecond bounds one whole backup (snapshot and upload). 0 or unset: the operator
	// scales the timeout with the database size (at least 10 minutes), so multi-GiB databases
	// are not cut off the way coreos/etcd-operator's fixed 60 s default cut them.
	// At most 86400 (a day); when set, at least 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 10",message="timeoutInSecond must be 0 (sized by the operator) or at least 10: a shorter deadline cannot fit a snapshot and its upload"
	// +optional
	TimeoutInSecond int64 `json:"timeoutInSecond,omitempty"`

	// backupIntervalInSecond makes the backup periodic: one snapshot every this many seconds.
	// 0 or unset: one-shot.
	// At most 31536000 (a year).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	BackupIntervalInSecond int64 `json:"backupIntervalInSecond,omitempty"`

	// maxBackups keeps this many periodic backups in the store, deleting the oldest ones this
	// operator wrote (never the newest successful one). 0 or unset: keep all.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxBackups int32 `json:"maxBackups,omitempty"`
}

// BackupStatus is the outcome of a backup. The fields up to lastSuccessDate are those of
// coreos/etcd-operator v0.9.4.
type BackupStatus struct {
	// succeeded is true once the (last) backup has been verified and committed.
	// +optional
	Succeeded bool `json:"succeeded,omitempty"`

	// Reason explains a failure. The JSON name is upper-case, as in coreos/etcd-operator.
	// +optional
	Reason string `json:"Reason,omitempty"`

	// etcdVersion is the server version of the member the snapshot was taken from.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`

	// etcdRevision is the store revision the snapshot holds.
	// +optional
	EtcdRevision int64 `json:"etcdRevision,omitempty"`

	// lastSuccessDate is when the last successful backup completed.
	// +optional
	LastSuccessDate *metav1.Time `json:"lastSuccessDate,omitempty"`

	// observedGeneration is the spec generation this status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary for display: Pending, Running, Completed, Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// conditions: Ready (with Reconciling or Stalled while it is False, the kstatus
	// conventions), Complete, Failed (with reason). See the Condition* and Reason* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// location is the object the (last) backup was written to, as <storageType>://<bucket>/<key>.
	// +optional
	Location string `json:"location,omitempty"`

	// size is the number of bytes of the snapshot, etcd's trailing checksum included (before
	// compression and encryption: what a restore reads back).
	// +optional
	Size int64 `json:"size,omitempty"`

	// sha256 is the hex SHA-256 of the snapshot, computed while streaming it (before compression
	// and encryption: the sha256 of what `age -d | zstd -d` gives back).
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// format is how the object is stored: plain, zstd, age or zstd+age (compressed, then
	// encrypted).
	// +optional
	Format string `json:"format,omitempty"`

	// member is the client URL of the member the snapshot was taken from.
	// +optional
	Member string `json:"member,omitempty"`

	// startTime is when the (last) backup started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the (last) backup finished, successfully or not.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// duration is how long the (last) backup took.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// attempts is how many times a one-shot backup was tried. Transient failures (etcd or the
	// object store unreachable, a broken or corrupt stream, a timeout) are retried with
	// exponential backoff up to 3 attempts before the backup is Failed for good.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// keyspaceCheck is the comparison, right after the upload, of the stored object's keyspace
	// hash with the source member's HashKV at the snapshot's revision (the backup operator's
	// --hashkv-check-max-size). A difference fails the backup (VerificationFailed) and deletes
	// the object; a check that could not compare says why in skipped, and the backup stands.
	// +optional
	KeyspaceCheck *KeyspaceCheck `json:"keyspaceCheck,omitempty"`
}

// KeyspaceCheck is the outcome of comparing a stored backup with the live cluster.
type KeyspaceCheck struct {
	// checked is true when the stored object's keyspace hash at revision equals the member's
	// HashKV at that revision.
	// +optional
	Checked bool `json:"checked,omitempty"`
	// hash is the keyspace hash (etcd's HashKV, a CRC-32C) both agree on.
	// +optional
	Hash int64 `json:"hash,omitempty"`
	// revision is the snapshot's own revision, read from the stored object (status.etcdRevision
	// is the member's, read before the snapshot).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// compactRevision is the snapshot's compaction revision (-1: never compacted).
	// +optional
	CompactRevision int64 `json:"compactRevision,omitempty"`
	// skipped says why no comparison was made: the member compacted past the revision, could
	// not be reached, runs etcd before 3.5.16, or the database is larger than the operator
	// checks.
	// +optional
	Skipped string `json:"skipped,omitempty"`
}

// BackupPhase is a one-word summary of a backup for display.
type BackupPhase string

// Backup phases, for display only.
const (
	BackupPhasePending   BackupPhase = "Pending"
	BackupPhaseRunning   BackupPhase = "Running"
	BackupPhaseCompleted BackupPhase = "Completed"
	BackupPhaseFailed    BackupPhase = "Failed"
)

// EtcdBackupList is a list of EtcdBackups.
//
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}
