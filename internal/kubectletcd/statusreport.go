package kubectletcd

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// statusReport is what `status` shows, and prints with -o json|yaml. statusOf builds it from the
// statuses once and writeStatus renders the text from it, so the text and the object never
// disagree.
type statusReport struct {
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// Phase and Reason are status.phase and status.reason (display only; scripts should read
	// Conditions).
	Phase  string `json:"phase,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Version is the version the members run (the lowest during an upgrade), TargetVersion the
	// one an upgrade under way moves to, SpecVersion spec.version.
	Version       string `json:"version,omitempty"`
	TargetVersion string `json:"targetVersion,omitempty"`
	SpecVersion   string `json:"specVersion,omitempty"`
	// Size is the number of members in the member list, ReadyMembers those started, voting and
	// healthy, SpecSize spec.size.
	Size         int32 `json:"size"`
	ReadyMembers int32 `json:"readyMembers"`
	SpecSize     int32 `json:"specSize"`
	// Outdated are the members whose pods run an older spec, being rolled.
	Outdated    []string `json:"outdated,omitempty"`
	Leader      string   `json:"leader,omitempty"`
	ClusterID   string   `json:"clusterID,omitempty"`
	ServiceName string   `json:"serviceName,omitempty"`
	ClientPort  int32    `json:"clientPort,omitempty"`
	// DefragmentRequest is a round asked for with `kubectl etcd defrag` that is not over.
	DefragmentRequest *etcdv1beta2.DefragmentRequestStatus `json:"defragmentRequest,omitempty"`
	// TLS is status.TLS: the CAs a TLS.auto cluster's members trust, and a CA rotation's step.
	TLS        *etcdv1beta2.TLSStatus `json:"TLS,omitempty"`
	Conditions []metav1.Condition     `json:"conditions"`
	Members    []statusMember         `json:"members"`
	Backups    statusBackups          `json:"backups"`
	// Drills has one entry per schedule that runs restore drills or recorded one.
	Drills []statusDrill `json:"drills"`
	// LastRecovery is status.lastRecovery, the last automatic recovery.
	LastRecovery *etcdv1beta2.RecoveryRecord `json:"lastRecovery,omitempty"`
}

// statusMember is one member as the etcd operator last reported it.
type statusMember struct {
	Name string `json:"name"`
	Role string `json:"role,omitempty"`
	// Leader: the member is status.leader; Outdated: its pod runs an older spec.
	Leader      bool   `json:"leader"`
	Outdated    bool   `json:"outdated"`
	Version     string `json:"version,omitempty"`
	DBSize      int64  `json:"dbSize"`
	DBSizeInUse int64  `json:"dbSizeInUse"`
	Healthy     bool   `json:"healthy"`
	LastError   string `json:"lastError,omitempty"`
}

// statusBackups is the cluster's newest successful backup and its schedules.
type statusBackups struct {
	// Newest is the newest successful backup a schedule or an EtcdBackup of the cluster
	// recorded; nil when none has succeeded.
	Newest *success `json:"newest,omitempty"`
	// RPOSeconds is now minus Newest.Time, in seconds (0 without a newest backup).
	RPOSeconds int64            `json:"rpoSeconds,omitempty"`
	Schedules  []statusSchedule `json:"schedules"`
}

// statusSchedule is one EtcdBackupSchedule of the cluster.
type statusSchedule struct {
	Name string `json:"name"`
	// Schedule is the cron schedule.
	Schedule           string       `json:"schedule"`
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	NextScheduleTime   *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Fresh is the status of the BackupFresh condition ("" without one), FreshReason its reason.
	Fresh       string `json:"fresh,omitempty"`
	FreshReason string `json:"freshReason,omitempty"`
	// Active is the number of the schedule's backups running.
	Active int `json:"active"`
}

// statusDrill is the last restore drill of one schedule.
type statusDrill struct {
	Schedule string `json:"schedule"`
	// LastDrill is status.lastDrill (what `drill now -o json` prints); nil before the first
	// drill finished.
	LastDrill *etcdv1beta2.DrillResult `json:"lastDrill,omitempty"`
	// DrillPassed is the schedule's DrillPassed condition; nil without one.
	DrillPassed   *metav1.Condition `json:"drillPassed,omitempty"`
	NextDrillTime *metav1.Time      `json:"nextDrillTime,omitempty"`
}

// statusOf is the report of r at now.
func statusOf(r *related, now time.Time) *statusReport {
	c, st := r.cluster, &r.cluster.Status
	rep := &statusReport{
		Namespace: c.Namespace, Cluster: c.Name,
		Phase: string(st.Phase), Reason: st.Reason,
		Version: st.CurrentVersion, TargetVersion: st.TargetVersion, SpecVersion: c.Spec.Version,
		Size: st.Size, ReadyMembers: st.ReadyMembers, SpecSize: c.Spec.Size, Outdated: st.Members.Outdated,
		Leader: st.Leader, ClusterID: st.ClusterID, ServiceName: st.ServiceName, ClientPort: st.ClientPort,
		DefragmentRequest: st.DefragmentRequest,
		TLS:               st.TLS,
		Conditions:        append([]metav1.Condition{}, st.Conditions...),
		Members:           []statusMember{},
		Backups:           statusBackups{Newest: newestSuccess(r), Schedules: []statusSchedule{}},
		Drills:            []statusDrill{},
		LastRecovery:      st.LastRecovery,
	}
	for _, m := range st.Members.Details {
		rep.Members = append(rep.Members, statusMember{
			Name: m.Name, Role: string(m.Role), Leader: m.Name == st.Leader, Outdated: slices.Contains(st.Members.Outdated, m.Name),
			Version: m.Version, DBSize: m.DBSize, DBSizeInUse: m.DBSizeInUse, Healthy: m.Healthy, LastError: m.LastError,
		})
	}
	if n := rep.Backups.Newest; n != nil {
		rep.Backups.RPOSeconds = int64(now.Sub(n.Time.Time) / time.Second)
	}
	for _, s := range r.schedules {
		sc := statusSchedule{Name: s.Name, Schedule: s.Spec.Schedule, LastSuccessfulTime: s.Status.LastSuccessfulTime,
			NextScheduleTime: s.Status.NextScheduleTime, Active: len(s.Status.Active)}
		if cond := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionBackupFresh); cond != nil {
			sc.Fresh, sc.FreshReason = string(cond.Status), cond.Reason
		}
		rep.Backups.Schedules = append(rep.Backups.Schedules, sc)

		cond := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed)
		if s.Spec.RestoreDrill == nil && s.Status.LastDrill == nil && cond == nil {
			continue
		}
		rep.Drills = append(rep.Drills, statusDrill{Schedule: s.Name, LastDrill: s.Status.LastDrill, DrillPassed: cond, NextDrillTime: s.Status.NextDrillTime})
	}
	return rep
}
