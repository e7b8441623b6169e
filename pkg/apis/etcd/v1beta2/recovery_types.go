package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RecoverySpec is the opt-in automatic recovery of a cluster that lost quorum for good: when
// the cluster has no volumes (emptyDir members), was formed, and every member pod is gone (so
// every member's data is gone and cannot return), for at least afterSeconds, the etcd operator
// creates an EtcdRestore of the cluster from the newest successful backup of the named
// EtcdBackupSchedule, once per incident. It never acts while any pod the cluster controls
// exists (found by owner UID, not labels), on a cluster with volumes, while a restore of the
// cluster is under way, or when that backup is not this cluster's (the schedule backs up
// another cluster, or the backup's key names another namespace or cluster ID) or is older than
// maxBackupAgeSeconds. The data written after
// that backup is lost; the operator records how much (the RPO) in events, on the EtcdRestore
// and in the recovered cluster's status.lastRecovery.
type RecoverySpec struct {
	// backupScheduleName names the EtcdBackupSchedule in this namespace whose newest
	// successful backup is restored: a DNS-1123 subdomain of at most 63 characters, as
	// EtcdBackupSchedule names are.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	BackupScheduleName string `json:"backupScheduleName"`

	// afterSeconds is how long quorum must have been lost with every member pod gone before
	// the operator restores: time for a person to look first. Default 120; at least 30.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	// +optional
	AfterSeconds *int32 `json:"afterSeconds,omitempty"`

	// maxBackupAgeSeconds is the oldest backup the operator restores on its own: when the
	// schedule's newest successful backup was taken longer ago than this before the loss, the
	// operator restores nothing and says so (a person decides whether that much loss is
	// acceptable). Default 86400 (a day); raise it for schedules that run less often.
	// +kubebuilder:validation:Minimum=60
	// +optional
	MaxBackupAgeSeconds *int64 `json:"maxBackupAgeSeconds,omitempty"`
}

// Defaults of spec.recovery.
const (
	// DefaultRecoveryAfterSeconds is spec.recovery.afterSeconds when unset.
	DefaultRecoveryAfterSeconds = 120
	// DefaultRecoveryMaxBackupAgeSeconds is spec.recovery.maxBackupAgeSeconds when unset.
	DefaultRecoveryMaxBackupAgeSeconds = 86400
)

// Labels and annotations of an EtcdRestore that automatic recovery created.
const (
	// LabelRecoveryOf names the EtcdCluster an automatic recovery restores.
	LabelRecoveryOf = "etcd.database.coreos.com/recovery-of"
	// LabelRecoveryOfUID is the UID of that EtcdCluster: one recovery per incarnation.
	LabelRecoveryOfUID = "etcd.database.coreos.com/recovery-of-uid"
	// AnnotationQuorumLostAt is when the cluster lost quorum with every member gone (RFC 3339).
	AnnotationQuorumLostAt = "etcd.database.coreos.com/quorum-lost-at"
	// AnnotationLastRevision is the highest revision a member reported before the loss.
	AnnotationLastRevision = "etcd.database.coreos.com/last-revision"
)

// RecoveryRecord is what an automatic recovery restored and what it lost.
type RecoveryRecord struct {
	// restoreName is the EtcdRestore the operator created.
	// +kubebuilder:validation:MaxLength=253
	RestoreName string `json:"restoreName"`
	// quorumLostAt is when quorum was lost with every member gone.
	// +optional
	QuorumLostAt *metav1.Time `json:"quorumLostAt,omitempty"`
	// backupTime is when the restored backup was taken.
	// +optional
	BackupTime *metav1.Time `json:"backupTime,omitempty"`
	// rpoSeconds is quorumLostAt - backupTime: at most this much time of writes was lost
	// (quorumLostAt is when the operator noticed, no earlier than the loss).
	// +optional
	RPOSeconds int64 `json:"rpoSeconds,omitempty"`
	// rpoRevisions is the last revision the operator observed before the loss (from its last
	// pass, up to a minute earlier) minus the backup's revision: at least this many revisions
	// were lost (0 when the last revision is not known).
	// +optional
	RPORevisions int64 `json:"rpoRevisions,omitempty"`
}
