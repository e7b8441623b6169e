package v1beta2

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationDefragmentRequestedAt, set on an EtcdCluster, asks the etcd operator for one
// defragmentation round of every member, run as a scheduled round is (only while every member
// is started, voting and healthy, one member per pass, the leader last). Its value is an RFC
// 3339 time the requester writes (`kubectl etcd defrag` writes the current time): whenever it
// differs from status.lastDefragmentRequest, the value the operator handled last, the operator
// starts a round (status.defragmentRequest) and, once every member was defragmented in it,
// records the value in status.lastDefragmentRequest. A value that is not an RFC 3339 time is
// refused: a Warning event, status.defragmentRequest says why, nothing is defragmented until
// the value changes. Removing the annotation withdraws a round not yet finished.
const AnnotationDefragmentRequestedAt = "etcd.database.coreos.com/defragment-requested-at"

// MaintenanceSpec is the upkeep of a cluster's storage: etcd's backend quota, automatic
// compaction of the key history, and defragmentation. Not in coreos/etcd-operator; a cluster
// without it gets the defaults below. The quota and compaction settings are etcd flags, so a
// change applies to members started after it (new or replaced members); the defragmentation
// settings apply at once.
//
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompaction) || !has(self.autoCompaction.retention) || self.autoCompaction.mode != 'Revision' || self.autoCompaction.retention.matches('^[1-9][0-9]{0,9}$')",message="autoCompaction.retention must be a number of revisions (1 to 9999999999) when mode is Revision"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompaction) || !has(self.autoCompaction.retention) || self.autoCompaction.mode == 'Revision' || self.autoCompaction.retention.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$')",message="autoCompaction.retention must be a duration such as 30m or 1h when mode is Periodic"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompaction) || !has(self.autoCompaction.retention) || self.autoCompaction.mode == 'Revision' || !self.autoCompaction.retention.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self.autoCompaction.retention) > duration('0s')",message="autoCompaction.retention must be longer than 0 when mode is Periodic (0 turns compaction off: list ETCD_AUTO_COMPACTION_RETENTION=0 in pod.etcdEnv for that)"
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
	// one at a time: e.g. "0 3 * * 0" for Sundays at 03:00, or a descriptor such as @weekly.
	// Checked at admission as an EtcdBackupSchedule's schedule is (five fields, each in range);
	// also accepted, as before: a CRON_TZ=<zone> prefix and @every <duration>. Empty: no
	// scheduled round.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^((CRON_)?TZ=[A-Za-z0-9_+/-]+ +)?(@every ([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+|@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$')",message="defragmentation.schedule must be a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. 0 3 * * 0) or one of @yearly, @monthly, @weekly, @daily, @hourly"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^((CRON_)?TZ=[A-Za-z0-9_+/-]+ +)?(@every ([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+|@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$') || self.matches('^((CRON_)?TZ=[A-Za-z0-9_+/-]+ +)?(@every .+|(?i:@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?(,([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?)* +([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?)* +([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?)*))$')",message="defragmentation.schedule has a field out of range or a zero step: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT, each a value, a range a-b, * or ?, optionally with a step /N of at least 1, in comma-separated lists"
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// fragmentedPercent: a member is defragmented when at least this share of its database file
	// is free pages, and at least minFreeBytes are free; at most once every 10 minutes per
	// member. Default 50; 0 turns this off.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	FragmentedPercent *int32 `json:"fragmentedPercent,omitempty"`
	// minFreeBytes is the free space below which fragmentation does not count. Default 64Mi;
	// not negative.
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="defragmentation.minFreeBytes must not be negative"
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`
}

// DefragmentRequestState is where a round requested with AnnotationDefragmentRequestedAt
// stands.
// +kubebuilder:validation:Enum=Pending;Refused
type DefragmentRequestState string

// States of a requested defragmentation round.
const (
	// DefragmentRequestPending: the operator accepted the request; the round runs, or waits for
	// a pass in which the cluster is healthy (the message says for what).
	DefragmentRequestPending DefragmentRequestState = "Pending"
	// DefragmentRequestRefused: the annotation's value is not an RFC 3339 time; nothing is done
	// until it changes.
	DefragmentRequestRefused DefragmentRequestState = "Refused"
)

// DefragmentRequestStatus is the defragmentation round requested with
// AnnotationDefragmentRequestedAt that the etcd operator has not finished.
type DefragmentRequestStatus struct {
	// requestedAt is the annotation's value this round was requested with (a refused value is
	// cut to its first 64 bytes).
	// +kubebuilder:validation:MaxLength=64
	// +required
	RequestedAt string `json:"requestedAt"`
	// state is Pending (accepted: the round runs or waits) or Refused (the value is not an RFC
	// 3339 time).
	// +required
	State DefragmentRequestState `json:"state"`
	// startedAt is when the operator accepted the request. Unset when refused.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// defragmented are the members (pod names) the round has defragmented so far, in order;
	// the round is over once every member is here.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Defragmented []string `json:"defragmented,omitempty"`
	// message says what the round does or waits for, or why the value was refused.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}
