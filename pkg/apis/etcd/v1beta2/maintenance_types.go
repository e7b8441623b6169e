package v1beta2

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// MaintenanceSpec is the upkeep of a cluster's storage: etcd's backend quota, automatic
// compaction of the key history, and defragmentation. Not in coreos/etcd-operator; a cluster
// without it gets the defaults below. The quota and compaction settings are etcd flags, so a
// change applies to members started after it (new or replaced members); the defragmentation
// settings apply at once.
//
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompaction) || !has(self.autoCompaction.retention) || self.autoCompaction.mode != 'Revision' || self.autoCompaction.retention.matches('^[1-9][0-9]{0,9}$')",message="autoCompaction.retention must be a number of revisions (1 to 9999999999) when mode is Revision"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompaction) || !has(self.autoCompaction.retention) || self.autoCompaction.mode == 'Revision' || self.autoCompaction.retention.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$')",message="autoCompaction.retention must be a duration such as 30m or 1h when mode is Periodic"
type MaintenanceSpec struct {
	// quotaBackendBytes is etcd's --quota-backend-bytes: the size of the database file at which
	// etcd raises the NOSPACE alarm and refuses writes until space is freed. Unset: etcd's
	// default (2 GiB). Between 16Mi and 8Gi (etcd's suggested maximum). Not with an
	// ETCD_QUOTA_BACKEND_BYTES entry in pod.etcdEnv.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('16Mi')) || quantity(string(self)).compareTo(quantity('16Mi')) == 0",message="quotaBackendBytes must be at least 16Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isLessThan(quantity('8Gi')) || quantity(string(self)).compareTo(quantity('8Gi')) == 0",message="quotaBackendBytes must be at most 8Gi (etcd's suggested maximum)"
	// +optional
	QuotaBackendBytes *resource.Quantity `json:"quotaBackendBytes,omitempty"`

	// autoCompaction is etcd's automatic compaction of the key history (older revisions of
	// keys; current values are never compacted). Unset: Periodic, retention 1h. Not with
	// ETCD_AUTO_COMPACTION_* entries in pod.etcdEnv, which keep their own meaning.
	// +optional
	AutoCompaction *AutoCompactionSpec `json:"autoCompaction,omitempty"`

	// defragmentation is when the operator defragments members, one at a time, followers first
	// and the leader last, and never while a member is unhealthy or a membership change is in
	// progress. Unset: when at least 50% (and 64Mi) of a member's database file is free pages.
	// A NOSPACE alarm is always handled: the operator compacts the history, defragments every
	// member with free pages and clears the alarm once every member's file is under 90% of the
	// quota.
	// +optional
	Defragmentation *DefragmentationSpec `json:"defragmentation,omitempty"`
}

// AutoCompactionMode is etcd's --auto-compaction-mode.
// +kubebuilder:validation:Enum=Periodic;Revision
type AutoCompactionMode string

// Auto-compaction modes.
const (
	// AutoCompactionPeriodic keeps the history of the last retention period.
	AutoCompactionPeriodic AutoCompactionMode = "Periodic"
	// AutoCompactionRevision keeps the last retention revisions.
	AutoCompactionRevision AutoCompactionMode = "Revision"
)

// Defaults of spec.maintenance.
const (
	// DefaultAutoCompactionRetention is the retention of Periodic compaction when unset.
	DefaultAutoCompactionRetention = "1h"
	// DefaultFragmentedPercent is the share of free pages at which a member is defragmented.
	DefaultFragmentedPercent = 50
	// DefaultQuotaBackendBytes is etcd's own default quota, used to judge NOSPACE recovery
	// when the spec sets none.
	DefaultQuotaBackendBytes = 2 << 30
)

// DefaultMinFreeBytes is the free space below which fragmentation is not worth a
// defragmentation, when unset.
var DefaultMinFreeBytes = resource.MustParse("64Mi")

// AutoCompactionSpec configures etcd's automatic compaction.
type AutoCompactionSpec struct {
	// mode is Periodic (retention is a duration) or Revision (retention is a number of
	// revisions).
	// +kubebuilder:default=Periodic
	// +optional
	Mode AutoCompactionMode `json:"mode,omitempty"`
	// retention: for Periodic a duration such as "30m" or "1h" (default "1h"); for Revision a
	// number of revisions such as "10000". "0" is not allowed: leave compaction to a client
	// (kube-apiserver compacts its own etcd) by listing ETCD_AUTO_COMPACTION_RETENTION=0 in
	// pod.etcdEnv instead.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Retention string `json:"retention,omitempty"`
}

// DefragmentationSpec says when members are defragmented.
type DefragmentationSpec struct {
	// schedule is a cron expression (five fields, UTC) at which every member is defragmented,
	// one at a time: e.g. "0 3 * * 0" for Sundays at 03:00. Empty: no scheduled round.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// fragmentedPercent: a member is defragmented when at least this share of its database file
	// is free pages, and at least minFreeBytes are free; at most once every 10 minutes per
	// member. Default 50; 0 turns this off.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	FragmentedPercent *int32 `json:"fragmentedPercent,omitempty"`
	// minFreeBytes is the free space below which fragmentation does not count. Default 64Mi.
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`
}
