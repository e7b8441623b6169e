package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The restore bootstrap of an EtcdCluster (spec.bootstrap.restore), what the etcd operator
// records about it (status.restore), and the annotations of an in-place restore.

// RestoreBootstrap says which backup a cluster's members are built from, and which members.
// +kubebuilder:validation:XValidation:rule="has(self.restoreName) || has(self.source)",message="bootstrap.restore needs source (the backup the etcd operator restores every member from) or restoreName (the EtcdRestore that seeds the members)"
// +kubebuilder:validation:XValidation:rule="has(self.source) || has(self.seedMember)",message="bootstrap.restore.seedMember is required without source"
// +kubebuilder:validation:XValidation:rule="!has(self.members) || !has(self.seedMember) || self.seedMember in self.members",message="members, when set, must include seedMember"
type RestoreBootstrap struct {
	// restoreName is the name of the EtcdRestore (in the same namespace) that made this
	// cluster. Empty for a cluster applied with source by a person or a GitOps tool.
	// +kubebuilder:validation:MinLength=1
	// +optional
	RestoreName string `json:"restoreName,omitempty"`
	// seedMember is the member whose answers the others are checked against. Without source
	// it is the pod the restore operator creates; with source, empty means the first of
	// members.
	// +kubebuilder:validation:MinLength=1
	// +optional
	SeedMember string `json:"seedMember,omitempty"`
	// members are the names of every member restored from the backup at once, seedMember
	// among them: each member's pod fetches and verifies the backup and runs etcdutl snapshot
	// restore with the same initial cluster, so the cluster forms with every member holding
	// the data (etcd's own disaster-recovery procedure) instead of replicating it through raft
	// once per added member. Empty with source: <name>-0 to <name>-<size-1>. Empty without
	// source: seedMember alone is restored and the etcd operator adds the other members
	// (clusters restored before members existed).
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:MinLength=1
	// +listType=set
	// +optional
	Members []string `json:"members,omitempty"`
	// source is the backup the etcd operator restores every member from: one object in an
	// object store, as an EtcdBackup's status names it, or (backupSelection Newest) the newest
	// verified backup of a cluster under a prefix. Immutable, as all of bootstrap.
	// +optional
	Source *RestoreSource `json:"source,omitempty"`
}

// RestoreSource is one backup object and what it must be. Each member's pod fetches it with
// the Secret its storage block names, checks it (size and sha256 when given, and always etcd's
// own trailing checksum), restores it with the etcd image's etcdutl, and reports the keyspace
// hash and key count it restored; the etcd operator checks every member against them before
// the cluster is Available (condition Restored).
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || has(self.s3)",message="storageType S3 needs the s3 block"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'ABS' || has(self.abs)",message="storageType ABS needs the abs block"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'GCS' || has(self.gcs)",message="storageType GCS needs the gcs block"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'OSS' || has(self.oss)",message="storageType OSS needs the oss block"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PVC' || has(self.pvc)",message="storageType PVC needs the pvc block"
// +kubebuilder:validation:XValidation:rule="!has(self.of) || (has(self.backupSelection) && self.backupSelection == 'Newest')",message="of names the cluster whose newest backup is restored: it needs backupSelection Newest"
// +kubebuilder:validation:XValidation:rule="!has(self.backupSelection) || self.backupSelection != 'Newest' || (!has(self.sha256) && !has(self.size) && !has(self.revision))",message="sha256, size and revision pin one backup object: they cannot be set with backupSelection Newest (the etcd operator records the object it chose, with its sha256 and size, in status.restore.selected)"
type RestoreSource struct {
	// storageType is the object store: S3, ABS, GCS, OSS, or PVC (a PersistentVolumeClaim of
	// this namespace).
	// +kubebuilder:validation:Enum=S3;ABS;GCS;OSS;PVC
	// +required
	StorageType BackupStorageType `json:"storageType"`
	// The storage block of storageType; its path is <bucket>/<key> of the backup object
	// (an EtcdBackup's status.location, without the scheme), or with backupSelection Newest
	// <bucket>/<prefix>, the prefix an EtcdBackup or EtcdBackupSchedule writes under.
	BackupSource `json:",inline"`
	// backupSelection says how the block's path is read. Exact (default): path is the backup
	// object. Newest: path is a prefix, and the etcd operator restores the newest backup under
	// it of the cluster `of` names (this EtcdCluster's namespace and name by default) that it
	// reads whole and finds valid; newer backups that do not verify are skipped and listed in
	// status.restore.selected. The choice is recorded before any member is created and never
	// made again. Newest is what a manifest kept in Git names: it stays right as backups come
	// and go, in any Kubernetes cluster that reaches the bucket.
	// +optional
	BackupSelection BackupSelection `json:"backupSelection,omitempty"`
	// of is the cluster whose backups a Newest selection considers, as the backup keys record
	// it. Unset: this EtcdCluster's namespace and name, any cluster ID. Backups of other
	// clusters under the prefix are never chosen; backups written before keys carried a cluster
	// (legacy keys) only when no other cluster's backup shares the prefix. Of the backups of
	// that namespace and name, those written in the operator's own Kubernetes cluster come
	// first; without any, those of the one other Kubernetes cluster that wrote them; when two
	// or more did, none is chosen until clusterID names one (docs/backups.md, "Object keys").
	// +optional
	Of *BackupIdentity `json:"of,omitempty"`
	// sha256 is the hex sha256 of the whole object (an EtcdBackup's status.sha256). Set it to
	// pin the backup: a member refuses any other object. Empty: only etcd's own trailing
	// checksum is checked.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// size is the object's size in bytes (an EtcdBackup's status.size); 0: not checked. It
	// also scales the restore's timeouts.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Size int64 `json:"size,omitempty"`
	// revision is the etcd revision the backup recorded (an EtcdBackup's status.revision); the
	// restored snapshot must reach it. 0: not checked.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// revisionBump raises the restored cluster's revision this far above the backup's and marks
	// the older revisions compacted (etcdutl snapshot restore --bump-revision
	// --mark-compacted), so that watchers that saw revisions after the backup re-list instead
	// of missing events. Default 1000000000, as EtcdRestore's; 0 keeps the backup's revisions.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionBump *int64 `json:"revisionBump,omitempty"`
	// pointInTime restores the keyspace as it was at a revision or a time after the backup,
	// by replaying onto the backup the continuous capture stored next to it: the segments under
	// <prefix>.segments/ of the backup's cluster identity (docs/restore.md, "Point-in-time
	// restore"). {} restores the newest revision captured. With backupSelection Newest, the
	// newest backup at or before the target is chosen. The etcd operator resolves the target to
	// one revision before any member is created (status.restore.pointInTime) and every member
	// replays to exactly that revision, so they agree while the capture goes on.
	// +optional
	PointInTime *PointInTime `json:"pointInTime,omitempty"`
}

// PointInTime is the point a restore brings the keyspace to; neither field: the newest
// revision the capture holds.
// +kubebuilder:validation:XValidation:rule="!(has(self.revision) && has(self.time))",message="pointInTime takes revision or time, not both"
type PointInTime struct {
	// revision is the last etcd revision restored: the keyspace exactly as the source cluster
	// served it at that revision. The capture must reach it.
	// +kubebuilder:validation:Minimum=2
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// time restores every revision the capture received at or before it (to the second, RFC
	// 3339). A time past the end of the capture restores the newest revision captured, and
	// status.restore.pointInTime.exact says so.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// RestoredPoint is the revision a pointInTime source was resolved to.
type RestoredPoint struct {
	// revision is the revision the keyspace is restored to, before revisionBump raises it.
	Revision int64 `json:"revision"`
	// time is when the capture received that revision.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// revisions is how many revisions are replayed onto the backup.
	Revisions int64 `json:"revisions"`
	// exact is true when the capture holds a revision past the target: the keyspace is the one
	// at the target. False: the capture ends before the target (a time past its end, or the
	// newest point), and this is the newest revision captured.
	// +optional
	Exact bool `json:"exact,omitempty"`
}

// BackupIdentity names the cluster a backup was taken from, as backup object keys record it
// (<prefix>_<time>_v<revision>_<namespace>_<name>_<cluster ID>).
type BackupIdentity struct {
	// namespace of the EtcdCluster the backups were taken from. Unset: this EtcdCluster's.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the EtcdCluster the backups were taken from. Unset: this EtcdCluster's.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`
	// clusterID, in hex as status.clusterID shows it, takes only backups of that incarnation
	// of the cluster (a cluster restored or re-created under the same name has a new ID).
	// Unset: any.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{1,16}$`
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
}

// SelectedBackup is the backup object a Newest selection chose, and the newer ones it skipped.
type SelectedBackup struct {
	// location is the chosen object (<type>://<bucket>/<key>).
	Location string `json:"location"`
	// size is its size in bytes, as read whole.
	Size int64 `json:"size"`
	// sha256 is the sha256 of the whole object; every member checks it.
	SHA256 string `json:"sha256"`
	// revision is the etcd revision its key records (0: a legacy key).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// time is when the backup was taken, as its key records it.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// skipped are newer backups of the cluster that did not read whole or verify, each as
	// "<location>: <why>".
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Skipped []string `json:"skipped,omitempty"`
}

// Annotations of an in-place restore, between the restore operator (which writes only
// EtcdClusters) and the etcd operator (which alone changes and deletes pods and volumes).
const (
	// AnnotationReplacedBy is set by the restore operator on an EtcdCluster it is about to
	// delete to restore it in place: the UID of that EtcdRestore. The etcd operator then
	// retains the cluster's volumes for that restore (AnnotationRetainedBy,
	// AnnotationRestoreUID, no owner) and, for a cluster on volumes, stops its member pods at
	// once (a one-second grace period) and holds it; the restore waits for both before it
	// deletes the cluster. A cluster whose data lives in its pods (emptyDir) is stopped so only
	// once deleted. If that EtcdRestore is deleted or fails before the cluster is, the etcd
	// operator sets the value to "cancelled:<UID>", gives the cluster its volumes back and
	// removes the marks: the cluster runs on.
	AnnotationReplacedBy = "etcd.database.coreos.com/replaced-by"
	// AnnotationReplacedByName is set with AnnotationReplacedBy: the name of that EtcdRestore.
	AnnotationReplacedByName = "etcd.database.coreos.com/replaced-by-name"
	// AnnotationRetainedBy is set on a volume of a cluster replaced in place: the name of the
	// EtcdRestore that keeps it until the restored cluster is verified (for people: the UID in
	// AnnotationRestoreUID is what is checked).
	AnnotationRetainedBy = "etcd.database.coreos.com/retained-by"
	// AnnotationRestoreUID is set on the EtcdCluster a restore creates, on its check Job and on
	// the volumes it retains: the UID of that EtcdRestore.
	AnnotationRestoreUID = "etcd.database.coreos.com/restore-uid"
	// AnnotationReleaseRetained is set by the restore operator on the cluster it restored once
	// every member is verified: the UID of that EtcdRestore. The etcd operator then deletes the
	// volumes retained for it (no owner, AnnotationRestoreUID equal, AnnotationRetainedBy the
	// restore that made the cluster), each with a UID precondition.
	AnnotationReleaseRetained = "etcd.database.coreos.com/release-retained"
)

// ClusterRestoreStatus is what the etcd operator restored into a cluster from
// bootstrap.restore.source and what it verified.
type ClusterRestoreStatus struct {
	// members are the members restored from the backup at once.
	// +optional
	Members []string `json:"members,omitempty"`
	// failedMembers are members whose restore failed for good after a quorum of the others
	// ran etcd on the restored data: their pods were stopped, and they join the cluster through
	// raft instead, like any member added later.
	// +optional
	FailedMembers []string `json:"failedMembers,omitempty"`
	// revision is the revision the restored keyspace was verified at (the backup's, raised by
	// revisionBump).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// backupRevision is the backup snapshot's own newest revision; with pointInTime, the
	// revision the replay of the capture brought it to (pointInTime.revision).
	// +optional
	BackupRevision int64 `json:"backupRevision,omitempty"`
	// hash is the keyspace hash (etcd's HashKV) at revision that every member serves.
	// +optional
	Hash int64 `json:"hash,omitempty"`
	// keys is the number of keys at revision.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// sha256 is the sha256 of the object the members restored.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// membersVerified is how many members were checked against the backup.
	// +optional
	MembersVerified int32 `json:"membersVerified,omitempty"`
	// completionTime is when every member was verified.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// selected is the backup a source with backupSelection Newest chose; set before any member
	// is created, and never changed.
	// +optional
	Selected *SelectedBackup `json:"selected,omitempty"`
	// pointInTime is the revision a source with pointInTime was resolved to, before any member
	// was created; every member replays the capture to it. Set once, never changed.
	// +optional
	PointInTime *RestoredPoint `json:"pointInTime,omitempty"`
}
