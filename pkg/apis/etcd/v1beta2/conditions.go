package v1beta2

// Condition types and reasons. Conditions are metav1.Conditions; a reason is a CamelCase word a
// program can match on, and the message says the rest for a person.

// Condition types of every kind, with the meanings of the kstatus conventions
// (sigs.k8s.io/cli-utils/pkg/kstatus) that kubectl wait, Flux and Argo CD health checks read.
// Trust them only when status.observedGeneration equals metadata.generation.
const (
	// ConditionReady is True when the object reached the state its spec asks for: an
	// EtcdCluster runs spec.size healthy members of spec.version with no change in progress; a
	// one-shot EtcdBackup completed (a periodic one: its last attempt succeeded); an
	// EtcdBackupSchedule is valid, runs, and neither its last backup nor its last restore drill
	// failed; an EtcdRestore succeeded. False otherwise, with the reason that keeps it from
	// being Ready (the reason of the kind's own condition that says so).
	ConditionReady = "Ready"
	// ConditionReconciling is True, with Ready's reason, while Ready is False and the operator
	// works toward it or retries; absent otherwise.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True, with Ready's reason, while Ready is False and the operator will
	// not get there without a change by someone: a failed backup or restore, an action the
	// operator refuses (quorum lost, a foreign object in the way), an invalid spec, a schedule
	// whose last backup or drill failed. Absent otherwise. A paused cluster or a suspended
	// schedule is neither Reconciling nor Stalled.
	ConditionStalled = "Stalled"
)

// EtcdCluster condition types.
const (
	// ClusterConditionAvailable is True when a quorum of members is healthy and serves requests.
	ClusterConditionAvailable = "Available"
	// ClusterConditionProgressing is True while the operator is changing the cluster toward its
	// spec (creating, adding, removing or replacing members).
	ClusterConditionProgressing = "Progressing"
	// ClusterConditionScaling is True while the member count differs from spec.size.
	ClusterConditionScaling = "Scaling"
	// ClusterConditionUpgrading is True while members move to spec.version; False with a reason
	// when the requested version change is refused.
	ClusterConditionUpgrading = "Upgrading"
	// ClusterConditionRolling is True (reason RollingUpdate) while members whose pods were made
	// from an older spec (status.members.outdated) are rolled to the current one; False with
	// reason RollBlocked when they cannot be rolled without losing data, AsExpected otherwise.
	ClusterConditionRolling = "Rolling"
	// ClusterConditionDegraded is True when the cluster needs attention: a member is down, quorum
	// is lost, or the spec cannot be applied. The reason says which.
	ClusterConditionDegraded = "Degraded"
	// ClusterConditionPaused is True while spec.paused stops the operator.
	ClusterConditionPaused = "Paused"
	// ClusterConditionRestored, on a cluster built from bootstrap.restore.source, is True once
	// every restored member serves the backup's keyspace (the same keyspace hash and key count
	// at the restored revision); False with the reason while members restore, or when the
	// restore failed. A cluster built from a backup is not Available before it is True.
	ClusterConditionRestored = "Restored"
	// ClusterConditionSpread, on a cluster of three members or more, is True when losing any
	// one node keeps a quorum of the members (no node runs more than (members-1)/2 of them);
	// False, reason NodeLossLosesQuorum, naming the node and its members, when one does: a
	// single-node Kubernetes, too few nodes the members may run on, or spec.pod.affinity or
	// nodeSelector that put them together. Counted from the pods' nodes only: zones are not
	// checked (they are Node labels, and the operator reads no Node).
	ClusterConditionSpread = "Spread"
)

// EtcdCluster condition reasons.
const (
	ReasonQuorumLost = "QuorumLost"
	// ReasonSurvivesNodeLoss: Spread is True, no node runs enough members to take the quorum.
	ReasonSurvivesNodeLoss = "SurvivesNodeLoss"
	// ReasonNodeLossLosesQuorum: Spread is False, one node runs so many members that losing
	// it loses the quorum; the message names it.
	ReasonNodeLossLosesQuorum = "NodeLossLosesQuorum"
	// ReasonNoSpace: a member raised etcd's NOSPACE alarm (its database reached the backend
	// quota) and the cluster refuses writes; the operator compacts, defragments and clears it.
	ReasonNoSpace = "NoSpace"
	// ReasonQuotaExceeded: NOSPACE, and after compaction and defragmentation the data itself
	// still fills the quota: raise spec.maintenance.quotaBackendBytes or delete keys.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonAlarmRaised: an etcd alarm the operator does not clear (CORRUPT) is active.
	ReasonAlarmRaised = "AlarmRaised"
	// ReasonVolumeExpansionUnsupported: the spec asks for larger member volumes and the API
	// server refuses to grow a claim (its StorageClass does not allow expansion).
	ReasonVolumeExpansionUnsupported = "VolumeExpansionUnsupported"
	ReasonMemberUnhealthy            = "MemberUnhealthy"
	ReasonUnsupportedUpgrade         = "UnsupportedUpgrade"
	ReasonWaitingForSeed             = "WaitingForSeed"
	ReasonPausedByUser               = "PausedByUser"
	ReasonClusterHealthy             = "ClusterHealthy"
	ReasonAsExpected                 = "AsExpected"
	ReasonInvalidSpec                = "InvalidSpec"
	ReasonSecretNotFound             = "SecretNotFound"
	ReasonEtcdUnreachable            = "EtcdUnreachable"
	ReasonScalingUp                  = "ScalingUp"
	ReasonScalingDown                = "ScalingDown"
	// ReasonTakingOver (Scaling): members of the operator's own replace, one at a time, those
	// coreos/etcd-operator made (AnnotationTakeOver).
	ReasonTakingOver        = "TakingOver"
	ReasonUpgradeInProgress = "UpgradeInProgress"
	ReasonRollingUpdate     = "RollingUpdate"
	ReasonRollBlocked       = "RollBlocked"
	ReasonCreatingSeed      = "CreatingSeed"
	ReasonReconcileError    = "ReconcileError"
	ReasonBackupNotFound    = "BackupNotFound"
	ReasonBackupCorrupt     = "BackupCorrupt"
	// ReasonNotCaptured: a point-in-time restore's target is not in the continuous capture
	// after the backup (the capture ends, or has a gap, before it), or the capture does not
	// continue the backup.
	ReasonNotCaptured        = "NotCaptured"
	ReasonStorageUnreachable = "StorageUnreachable"
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonDecryptionFailed: the backup or segment is encrypted, and the encryption Secret's
	// identities do not open it (a wrong key), or no encryption is configured to read it.
	ReasonDecryptionFailed = "DecryptionFailed"
	// ReasonEncryptionKeyInvalid: the encryption Secret has no usable key: no `identity` or
	// `recipients`, or one that does not parse as an age X25519 key.
	ReasonEncryptionKeyInvalid = "EncryptionKeyInvalid"
	// ReasonAmbientCredentialsDenied: a storage block names no credentials Secret, and the
	// operator's own cloud identity is not allowed for that bucket (--ambient-credentials) or
	// would go to an endpoint the spec names.
	ReasonAmbientCredentialsDenied = "AmbientCredentialsDenied"
	// ReasonCoreosMembersFound: member pods of the cluster were made by coreos/etcd-operator;
	// the etcd operator changes nothing of the cluster (docs/migrating-from-coreos.md).
	ReasonCoreosMembersFound = "CoreosMembersFound"
	// ReasonTakeOverRefused: AnnotationTakeOver asks the etcd operator to take over a cluster
	// whose members coreos/etcd-operator made, and the cluster is not one it can take over (the
	// message says why and what to do); nothing of the cluster is changed.
	ReasonTakeOverRefused = "TakeOverRefused"
	// ReasonIssuerNotAllowed: TLS.auto.issuerRef names an issuer that is not an Issuer of the
	// cluster's own namespace, and the etcd operator's --allowed-issuer-kinds does not list its kind.
	ReasonIssuerNotAllowed = "IssuerNotAllowed"
	// ReasonEndpointNotAllowed: an EtcdBackup's etcdEndpoints name a host outside the backup's
	// namespace that the operator's --allowed-etcd-endpoints does not list, or a Service of the
	// namespace that can lead outside it (ExternalName, no selector, an EndpointSlice address
	// that is not its pod's IP).
	ReasonEndpointNotAllowed  = "EndpointNotAllowed"
	ReasonClusterNotFound     = "ClusterNotFound"
	ReasonSnapshotFailed      = "SnapshotFailed"
	ReasonVerificationFailed  = "VerificationFailed"
	ReasonTimeout             = "Timeout"
	ReasonInvalidSchedule     = "InvalidSchedule"
	ReasonInvalidTimeZone     = "InvalidTimeZone"
	ReasonScheduleSuspended   = "Suspended"
	ReasonBackupTooOld        = "BackupTooOld"
	ReasonBackupRecent        = "BackupRecent"
	ReasonNoSuccessfulBackup  = "NoSuccessfulBackup"
	ReasonTemplateNotFound    = "TemplateNotFound"
	ReasonRevisionMismatch    = "RevisionMismatch"
	ReasonBackupSucceeded     = "BackupSucceeded"
	ReasonRestoreSucceeded    = "RestoreSucceeded"
	ReasonInsufficientStorage = "InsufficientStorage"
	ReasonClusterExists       = "ClusterExists"
	ReasonSeedFailed          = "SeedFailed"
	ReasonRestoring           = "Restoring"
	ReasonDrillPassed         = "DrillPassed"
	ReasonDrillFailed         = "DrillFailed"
	// ReasonBackupFailed: the newest finished EtcdBackup of a schedule failed; the message
	// names it and its own reason.
	ReasonBackupFailed = "BackupFailed"
	// ReasonCertManagerNotInstalled: TLS.auto.issuerRef is set and the API server does not serve
	// cert-manager's Certificate kind (cert-manager.io/v1).
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// ReasonCertificateNotReady: TLS.auto.issuerRef is set and cert-manager has not (yet) issued
	// the three certificates under one CA; the message says which and what cert-manager says.
	ReasonCertificateNotReady = "CertificateNotReady"
)

// Reasons of the safety checks (docs/safety.md): the operators refuse, say why, and delete
// nothing.
const (
	// ReasonNotOwned: an object the operator would change or delete (a pod, volume or Service
	// with the cluster's name or labels) is not controlled by this object (owner UID).
	ReasonNotOwned = "NotOwned"
	// ReasonMembershipUnverified: the member list could not be read linearizably (no quorum, or
	// the answering member is partitioned); no membership change or deletion is made from it.
	ReasonMembershipUnverified = "MembershipUnverified"
	// ReasonClusterIDMismatch: the members that answer belong to an etcd cluster whose ID is not
	// the one recorded in status.clusterID.
	ReasonClusterIDMismatch = "ClusterIDMismatch"
	// ReasonSeedConflict: a pod or volume stands at the seed member's name and the restore did
	// not create it.
	ReasonSeedConflict = "SeedConflict"
	// ReasonMemberRefused: the API server refused a member's pod or volume (Pod Security,
	// quota, a LimitRange, an admission webhook); the message quotes it. Nothing else is done
	// for the cluster until it is admitted; retried every 15 s.
	ReasonMemberRefused = "MemberRefused"
	// ReasonReplacedInPlace: an EtcdRestore replaces the cluster in place; the etcd operator has
	// retained its volumes and stopped its members, and the restore is about to delete it
	// (Available False). If that restore is deleted or fails first, the cluster runs on.
	ReasonReplacedInPlace = "ReplacedInPlace"
	// ReasonRestoreInProgress: another EtcdRestore of the same cluster has not finished.
	ReasonRestoreInProgress = "RestoreInProgress"
	// ReasonPreflightFailed: a check before an in-place restore deletes the old cluster failed
	// (seed agent image, etcd version, credentials, storage class, volume quota, or the API
	// server refusing the pod of the restore check Job, which runs the members' containers).
	ReasonPreflightFailed = "PreflightFailed"
	// ReasonIncompatibleVersion: the backup was taken by an etcd newer than the cluster runs.
	ReasonIncompatibleVersion = "IncompatibleVersion"
	// ReasonRestoreFailed: on an EtcdCluster, the EtcdRestore that seeds it failed; the message
	// says how to retry.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonAuthFailed: etcd refused the operator's credentials (auth.secretName of the
	// EtcdCluster or EtcdBackup), or the cluster runs with authentication and the operator has
	// none, or the user lacks the root role; nothing is changed until the credentials work.
	ReasonAuthFailed = "AuthFailed"
	// ReasonObjectExists: a one-shot backup's exact path already holds an object; backups never
	// overwrite one.
	ReasonObjectExists = "ObjectExists"
)

// EtcdBackup condition types.
const (
	// BackupConditionComplete is True once the snapshot was verified and committed.
	BackupConditionComplete = "Complete"
	// BackupConditionFailed is True when the backup failed; the reason says why.
	BackupConditionFailed = "Failed"
)

// EtcdRestore condition types.
const (
	// RestoreConditionBackupVerified is True once the backup was found, its size and checksum
	// matched, and it read as a valid snapshot; False with a reason otherwise.
	RestoreConditionBackupVerified = "BackupVerified"
	// RestoreConditionBackupRestorable is True once the whole restore pipeline ran on the
	// verified backup in a throwaway pod (download, checksums, etcdutl snapshot restore into a
	// scratch volume, keyspace hash and key count), before an in-place restore deletes anything;
	// False with the failure's reason when it did not restore. Restores into a new name skip it:
	// they destroy nothing, and their members run the same pipeline.
	RestoreConditionBackupRestorable = "BackupRestorable"
	// RestoreConditionSeeded is True once the seed member runs on the restored data.
	RestoreConditionSeeded = "Seeded"
	// RestoreConditionComplete is True once the cluster is Available with the backup's revision.
	RestoreConditionComplete = "Complete"
	// RestoreConditionFailed is True when the restore failed; the reason says why.
	RestoreConditionFailed = "Failed"
	// RestoreConditionOldPodsStuck is True while pods of the cluster an in-place restore
	// replaces stay Terminating long past their grace period (their node is gone, or no longer
	// reports): the message names them and their nodes. The restore cannot go on until they are
	// gone: fencing their nodes with the node.kubernetes.io/out-of-service taint has Kubernetes
	// delete them, AnnotationForceDeleteStuckPods has the etcd operator force-delete them.
	// False once they are gone.
	RestoreConditionOldPodsStuck = "OldPodsStuck"
)

// AnnotationForceDeleteStuckPods, set to "true" on an EtcdRestore by a person who has made
// sure the nodes of the replaced cluster's stuck pods are gone (condition OldPodsStuck), has
// those pods force-deleted (grace period 0): the restore operator copies it onto the replaced
// EtcdCluster, and the etcd operator force-deletes only pods that cluster controls, stuck
// Terminating. On a node that still runs, such a pod's etcd would go on running, unseen by
// Kubernetes, until that node's kubelet stops it.
const AnnotationForceDeleteStuckPods = "etcd.database.coreos.com/force-delete-stuck-pods"

// AnnotationTakeOver, set to "true" on an EtcdCluster whose member pods coreos/etcd-operator
// made, is the user's go-ahead for the etcd operator to take that cluster over in place: it
// adds members of its own, one at a time, as learners of the running cluster, promotes each,
// then removes one coreos member (leadership moved off it first), until only its own members
// are left; the data, revisions, leases and the Services stay. Without it, such a cluster is
// left untouched (CoreosMembersFound). Refused (TakeOverRefused) for a cluster on an etcd
// older than 3.5, with TLS, or with members on volumes (docs/migrating-from-coreos.md).
const AnnotationTakeOver = "etcd.database.coreos.com/take-over"

// EtcdBackupSchedule condition types.
const (
	// ScheduleConditionReady is the Ready condition of every kind (ConditionReady): True when
	// the schedule is Scheduling and neither the newest finished backup nor the newest finished
	// restore drill failed; False with InvalidSchedule, InvalidTimeZone, Suspended, BackupFailed
	// or DrillFailed otherwise.
	ScheduleConditionReady = ConditionReady
	// ScheduleConditionScheduling is True when the schedule is valid and not suspended: its runs
	// and drills are started; False with InvalidSchedule, InvalidTimeZone or Suspended. Runs
	// missed while it was False are not made up.
	ScheduleConditionScheduling = "Scheduling"
	// ScheduleConditionBackupFresh is True when the newest successful backup is no older than
	// the schedule's interval (plus the starting deadline and a grace period): the recovery
	// point objective the schedule promises is met.
	ScheduleConditionBackupFresh = "BackupFresh"
	// ScheduleConditionDrillPassed is True when the newest finished restore drill restored the
	// backup and verified it; False with the drill's failure reason otherwise.
	ScheduleConditionDrillPassed = "DrillPassed"
	// ScheduleConditionCapturing, with spec.continuousCapture, is True while the capture runs
	// and stores its segments (reason Capturing); False with WaitingForBackup (no full backup
	// of the cluster to continue yet, or etcd compacted the revisions after the newest one: a
	// new full backup was requested), EtcdUnreachable, StorageUnreachable (the segments
	// waiting for the store passed maxBufferedSize), AuthFailed, InvalidCredentials or
	// CaptureConflict. The capture retries by itself.
	ScheduleConditionCapturing = "Capturing"
)

// Reasons of the Capturing condition.
const (
	// ReasonCapturing: the capture runs; the message gives the newest revision stored.
	ReasonCapturing = "Capturing"
	// ReasonWaitingForBackup: the capture has no full backup of the cluster to continue (none
	// yet, the cluster has a new cluster ID, or etcd compacted the revisions after the newest
	// one and the last one captured); the schedule starts a full backup and the capture
	// continues it.
	ReasonWaitingForBackup = "WaitingForBackup"
	// ReasonCaptureConflict: an object other than the segment is stored under a segment's key:
	// another capture of the same cluster writes under the prefix. Segments are never
	// overwritten.
	ReasonCaptureConflict = "CaptureConflict"
)
