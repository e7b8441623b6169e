package v1beta2

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdBackupSchedule creates one EtcdBackup per run of a cron schedule, the way a CronJob
// creates Jobs, keeps a bounded history of those objects, and applies retention to the backup
// objects in the bucket.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=etcdbackupschedule;etcdbks,categories=etcd-operator
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition: the object reached the state its spec asks for"
// +kubebuilder:printcolumn:name="Fresh",type=string,JSONPath=`.status.conditions[?(@.type=="BackupFresh")].status`,description="Newest successful backup is as recent as the schedule promises"
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Captured",type=date,JSONPath=`.status.capture.capturedTime`,description="When the continuous capture received the newest revision it stored",priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is (not) Ready",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it becomes the value of the etcd.database.coreos.com/schedule label on every backup"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.continuousCapture) || !has(self.spec.continuousCapture.maxSegmentSize) || !has(self.spec.continuousCapture.maxBufferedSize) || quantity(self.spec.continuousCapture.maxSegmentSize).compareTo(quantity(self.spec.continuousCapture.maxBufferedSize)) <= 0",message="continuousCapture.maxBufferedSize must be at least maxSegmentSize"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.restoreDrill) || has(self.spec.restoreDrill.clusterTemplate) || has(self.spec.backupTemplate.spec.etcdCluster)",message="restoreDrill needs clusterTemplate when the backups are taken through etcdEndpoints: the scratch cluster copies an EtcdCluster's spec"
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the schedule, the template of the backups it creates, and retention.
	// +required
	Spec BackupScheduleSpec `json:"spec"`
	// status is written by the backup operator only.
	// +optional
	Status BackupScheduleStatus `json:"status,omitempty"`
}

// BackupScheduleSpec is the desired behaviour of an EtcdBackupSchedule.
type BackupScheduleSpec struct {
	// schedule is a 5-field cron expression (minute hour day-of-month month day-of-week), e.g.
	// "0 */6 * * *", or a descriptor such as @hourly or @daily, as Kubernetes CronJob accepts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="set the time zone in timeZone, not with TZ= or CRON_TZ= in schedule"
	// +kubebuilder:validation:XValidation:rule="self.contains('TZ=') || self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$')",message="schedule must be a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. 0 */6 * * *) or one of @yearly, @monthly, @weekly, @daily, @hourly"
	// +kubebuilder:validation:XValidation:rule="self.contains('TZ=') || !self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$') || self.matches('^(?i:@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?(,([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?)* +([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?)* +([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?)*)$')",message="schedule has a field out of range or a zero step: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT, each a value, a range a-b, * or ?, optionally with a step /N of at least 1, in comma-separated lists"
	// +required
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in, e.g. "Europe/Berlin". Unset: UTC.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+/-]+$`
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="timeZone must name a zone such as Europe/Berlin or UTC: Local would be the operator pod's zone, which nobody chose"
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// suspend stops new runs while true; runs missed meanwhile are not made up afterwards.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// concurrencyPolicy says what happens when a run is due while the previous backup still
	// runs: Forbid (default) skips the new run, Allow starts it anyway, Replace deletes the
	// running backup and starts the new one.
	// +kubebuilder:default=Forbid
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds: a run that cannot start within this many seconds of its
	// scheduled time is skipped (and counted as missed). Unset: no deadline, but at most one
	// missed run is made up.
	// At least 10 (the scheduler may start a run a few seconds late, and a shorter deadline would
	// skip it), at most 31536000 (a year).
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// successfulBackupsHistoryLimit is how many completed EtcdBackup objects to keep (the
	// objects in the bucket are governed by retention). Defaults to 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessfulBackupsHistoryLimit *int32 `json:"successfulBackupsHistoryLimit,omitempty"`

	// failedBackupsHistoryLimit is how many failed EtcdBackup objects to keep. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedBackupsHistoryLimit *int32 `json:"failedBackupsHistoryLimit,omitempty"`

	// backupTemplate is the EtcdBackup each run creates. Its storage path is a prefix: each
	// backup is written under it with a UTC timestamp and the zero-padded etcd revision.
	// +required
	BackupTemplate BackupTemplateSpec `json:"backupTemplate"`

	// retention says which backup objects in the bucket to keep. The newest successful backup
	// is never deleted, and only objects this project wrote under the template's path are
	// considered. Unset: keep everything.
	// +optional
	Retention *RetentionPolicy `json:"retention,omitempty"`

	// restoreDrill, when set, regularly restores the newest successful backup into a scratch
	// cluster, verifies it and deletes the scratch cluster afterwards: recovery tested without a
	// person. Its outcome is in status.lastDrill and the DrillPassed condition.
	// +optional
	RestoreDrill *RestoreDrillSpec `json:"restoreDrill,omitempty"`

	// continuousCapture, when set, streams every change of the cluster between its full backups
	// into verified segments stored next to them (under the template's path): the recovery point
	// becomes seconds instead of the schedule's interval, and a restore can reach any revision
	// or time captured after a full backup kept (bootstrap.restore.pointInTime, EtcdRestore
	// spec.pointInTime). The backup operator watches the cluster from the newest full backup's
	// revision; without one (or when etcd compacted the revisions the capture needs next) it
	// starts a full backup at once. Retention deletes the segments no retained backup needs.
	// Status in status.capture and the Capturing condition. See docs/backups.md.
	// +optional
	ContinuousCapture *ContinuousCaptureSpec `json:"continuousCapture,omitempty"`
}

// ContinuousCaptureSpec tunes the continuous capture of a schedule's cluster. The defaults suit
// most clusters; all fields are optional.
type ContinuousCaptureSpec struct {
	// segmentIntervalSeconds is the longest a segment stays open after its first change: the
	// capture's recovery point objective, plus the upload. Default 5.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=5
	// +optional
	SegmentIntervalSeconds *int32 `json:"segmentIntervalSeconds,omitempty"`

	// maxSegmentSize closes a segment once it holds this many bytes (it may exceed it by one
	// revision). Default 8Mi; between 64Ki and 256Mi.
	// +kubebuilder:validation:XValidation:rule="quantity(self).isGreaterThan(quantity('64Ki')) || quantity(self).compareTo(quantity('64Ki')) == 0",message="maxSegmentSize must be at least 64Ki"
	// +kubebuilder:validation:XValidation:rule="quantity(self).isLessThan(quantity('256Mi')) || quantity(self).compareTo(quantity('256Mi')) == 0",message="maxSegmentSize must be at most 256Mi"
	// +optional
	MaxSegmentSize *resource.Quantity `json:"maxSegmentSize,omitempty"`

	// maxBufferedSize bounds the closed segments the operator holds in memory while the store
	// fails. Beyond it the capture stops (Capturing False, StorageUnreachable) and resumes from
	// the last revision stored once the store answers, as long as etcd still has the revisions
	// after it (otherwise a new full backup is taken). Default 64Mi; between 1Mi and 1Gi, and at
	// least maxSegmentSize.
	// +kubebuilder:validation:XValidation:rule="quantity(self).isGreaterThan(quantity('1Mi')) || quantity(self).compareTo(quantity('1Mi')) == 0",message="maxBufferedSize must be at least 1Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(self).isLessThan(quantity('1Gi')) || quantity(self).compareTo(quantity('1Gi')) == 0",message="maxBufferedSize must be at most 1Gi"
	// +optional
	MaxBufferedSize *resource.Quantity `json:"maxBufferedSize,omitempty"`
}

// CaptureStatus is where the continuous capture of a schedule's cluster stands.
type CaptureStatus struct {
	// clusterID is the etcd cluster ID (hex) of the cluster captured.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// startRevision is the first revision of the running capture: the revision after the
	// newest full backup's, or after the last one stored when the capture resumed.
	// +optional
	StartRevision int64 `json:"startRevision,omitempty"`
	// capturedRevision is the newest revision stored in a verified segment: the newest point a
	// restore can reach.
	// +optional
	CapturedRevision int64 `json:"capturedRevision,omitempty"`
	// capturedTime is when the capture received capturedRevision from etcd.
	// +optional
	CapturedTime *metav1.Time `json:"capturedTime,omitempty"`
	// etcdRevision is the newest revision of the cluster the capture has seen.
	// +optional
	EtcdRevision int64 `json:"etcdRevision,omitempty"`
	// segments is the number of segments the running capture stored.
	// +optional
	Segments int64 `json:"segments,omitempty"`
	// lastBackupRequest is the name of the EtcdBackup the schedule started, outside its
	// schedule, because the capture needed a full backup to continue.
	// +optional
	LastBackupRequest string `json:"lastBackupRequest,omitempty"`
}

// BackupTemplateSpec is the template of the EtcdBackups a schedule creates.
type BackupTemplateSpec struct {
	// metadata holds labels and annotations for the created EtcdBackups.
	// +optional
	Metadata BackupTemplateMetadata `json:"metadata,omitempty"`

	// spec of the created EtcdBackups; one-shot (no backupIntervalInSecond, no maxBackups:
	// the schedule decides when, and retention how many).
	// +kubebuilder:validation:XValidation:rule="!has(self.backupPolicy) || ((!has(self.backupPolicy.backupIntervalInSecond) || self.backupPolicy.backupIntervalInSecond == 0) && (!has(self.backupPolicy.maxBackups) || self.backupPolicy.maxBackups == 0))",message="backupTemplate.spec.backupPolicy may set only timeoutInSecond: the schedule decides when backups run, and retention how many are kept"
	// +required
	Spec BackupSpec `json:"spec"`
}

// BackupTemplateMetadata is the metadata a schedule puts on the EtcdBackups it creates.
type BackupTemplateMetadata struct {
	// labels added to each created EtcdBackup.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations added to each created EtcdBackup.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RetentionPolicy says which backup objects in the bucket to keep.
//
// +kubebuilder:validation:XValidation:rule="has(self.maxBackups) || has(self.maxAge)",message="retention needs maxBackups, maxAge or both"
type RetentionPolicy struct {
	// maxBackups keeps at most this many backups (the newest ones).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxBackups *int32 `json:"maxBackups,omitempty"`

	// maxAge deletes backups older than this, e.g. "720h" (30 days); Go duration syntax.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="maxAge must be a positive duration such as 168h or 90m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="maxAge must be at least 1m: a shorter one would delete backups as they are written"
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// ConcurrencyPolicy says what a schedule does when a run is due while a backup still runs.
//
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

// Concurrency policies, as in Kubernetes CronJob.
const (
	AllowConcurrent   ConcurrencyPolicy = "Allow"
	ForbidConcurrent  ConcurrencyPolicy = "Forbid"
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// BackupScheduleStatus is the observed state of an EtcdBackupSchedule.
type BackupScheduleStatus struct {
	// observedGeneration is the spec generation this status was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the schedule runs and neither its last backup nor its last restore
	// drill failed; with Stalled while it is False for a reason only a change fixes, the kstatus
	// conventions), Scheduling (the schedule is valid and not suspended), BackupFresh (the
	// newest successful backup is as recent as the schedule promises), DrillPassed. See the
	// Condition* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// active are the names of the schedule's EtcdBackups that have not finished.
	// +listType=atomic
	// +optional
	Active []string `json:"active,omitempty"`

	// lastScheduleTime is the scheduled time of the last run that created a backup.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is the scheduled time of the next run.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when the newest successful backup completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// lastSuccessfulBackup is the name of the newest successful EtcdBackup.
	// +optional
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`

	// lastSuccessfulLocation is where the newest successful backup was written.
	// +optional
	LastSuccessfulLocation string `json:"lastSuccessfulLocation,omitempty"`

	// lastDrillTime is the scheduled time of the last restore drill started.
	// +optional
	LastDrillTime *metav1.Time `json:"lastDrillTime,omitempty"`

	// nextDrillTime is the scheduled time of the next restore drill.
	// +optional
	NextDrillTime *metav1.Time `json:"nextDrillTime,omitempty"`

	// lastDrill is the outcome of the newest finished restore drill.
	// +optional
	LastDrill *DrillResult `json:"lastDrill,omitempty"`

	// capture is where spec.continuousCapture stands; unset without it.
	// +optional
	Capture *CaptureStatus `json:"capture,omitempty"`
}

// RestoreDrillSpec makes an EtcdBackupSchedule test its own backups: on its own cron schedule it
// restores the newest successful backup into a scratch cluster with an EtcdRestore, which
// verifies the restored keyspace on every member, records the time to restore, and deletes the
// scratch cluster after ttlSecondsAfterFinished. With continuousCapture, the drill also replays
// the capture up to the newest revision it holds (pointInTime {}), so that it proves the
// recovery point the capture gives, not only the backup's.
type RestoreDrillSpec struct {
	// schedule is a 5-field cron expression (read in the schedule's timeZone) for the drills,
	// e.g. "0 4 * * 0" for Sundays at 04:00, or a descriptor such as @weekly.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$')",message="restoreDrill.schedule must be a 5-field cron expression (e.g. 0 4 * * 0) or one of @yearly, @monthly, @weekly, @daily, @hourly"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9*/,?A-Za-z-]+( +[0-9*/,?A-Za-z-]+){4})$') || self.matches('^(?i:@(yearly|annually|monthly|weekly|daily|midnight|hourly)|([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?(,([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?)* +([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?)* +([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?)*)$')",message="restoreDrill.schedule has a field out of range or a zero step: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT, each a value, a range a-b, * or ?, optionally with a step /N of at least 1, in comma-separated lists"
	// +required
	Schedule string `json:"schedule"`

	// clusterTemplate names the EtcdCluster whose spec (size, version, pod policy, TLS) the
	// scratch cluster copies. Unset: the cluster the backups are taken of
	// (backupTemplate.etcdCluster).
	// +optional
	ClusterTemplate *EtcdClusterRef `json:"clusterTemplate,omitempty"`

	// ttlSecondsAfterFinished is how long a drill's scratch cluster is kept after the drill
	// finished, for inspection. Default 600.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2592000
	// +kubebuilder:default=600
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// historyLimit is how many finished drill EtcdRestores are kept. Default 3.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=3
	// +optional
	HistoryLimit *int32 `json:"historyLimit,omitempty"`
}

// DrillResult is the outcome of one restore drill.
type DrillResult struct {
	// restore is the name of the drill's EtcdRestore.
	Restore string `json:"restore"`
	// backup is the location of the backup the drill restored.
	// +optional
	Backup string `json:"backup,omitempty"`
	// passed is true when the restore succeeded and its verification passed.
	Passed bool `json:"passed"`
	// reason says why a drill failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// completionTime is when the drill finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// timeToRestore is the drill's measured time to restore (RTO).
	// +optional
	TimeToRestore *metav1.Duration `json:"timeToRestore,omitempty"`
	// backupAge is how old the restored backup was when the drill started.
	// +optional
	BackupAge *metav1.Duration `json:"backupAge,omitempty"`
	// pointInTime, for a schedule with continuousCapture, is the newest captured point the
	// drill replayed onto the backup: its revision, when the capture received it, and how many
	// revisions were replayed.
	// +optional
	PointInTime *RestoredPoint `json:"pointInTime,omitempty"`
	// recoveryPointAge is the recovery point the drill proved (its RPO): how long before the
	// drill started the newest change it restored was made. Without continuousCapture it is
	// backupAge; with it, the drill's start minus when the capture received the newest revision
	// replayed (backupAge when the capture held none after the backup), 0 when that revision
	// came after the start. Every write acknowledged before that point came back. A cluster
	// with no writes in between would have lost nothing, which this figure cannot tell.
	// +optional
	RecoveryPointAge *metav1.Duration `json:"recoveryPointAge,omitempty"`
	// keys is the number of keys the drill verified.
	// +optional
	Keys int64 `json:"keys,omitempty"`
}

// EtcdBackupScheduleList is a list of EtcdBackupSchedules.
//
// +kubebuilder:object:root=true
type EtcdBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackupSchedule `json:"items"`
}
