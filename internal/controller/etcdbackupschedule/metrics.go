package etcdbackupschedule

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
	"github.com/etcd-operator/etcd-operator/internal/options"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Results of etcd_operator_backup_schedule_last_run_result.
const (
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunRunning   = "running"
)

// listTimeout bounds the List of the informer cache a scrape makes.
const listTimeout = 10 * time.Second

var (
	scheduleLabels = []string{"cluster_namespace", "cluster", "schedule"}

	// The schedule's state, read from its status at every scrape (kube-state-metrics style):
	// a deleted schedule's series go with it, and every replica reports the same values.
	descSuspended = prometheus.NewDesc("etcd_operator_backup_schedule_suspended",
		"1 while the EtcdBackupSchedule is suspended (spec.suspend), else 0.", scheduleLabels, nil)
	descLastSchedule = prometheus.NewDesc("etcd_operator_backup_schedule_last_schedule_timestamp_seconds",
		"Scheduled Unix time of the schedule's last run that created a backup.", scheduleLabels, nil)
	descNextSchedule = prometheus.NewDesc("etcd_operator_backup_schedule_next_schedule_timestamp_seconds",
		"Scheduled Unix time of the schedule's next run.", scheduleLabels, nil)
	descLastSuccess = prometheus.NewDesc("etcd_operator_backup_schedule_last_success_timestamp_seconds",
		"Unix time the schedule's newest successful backup completed.", scheduleLabels, nil)
	descMaxAge = prometheus.NewDesc("etcd_operator_backup_schedule_max_backup_age_seconds",
		"Age the newest successful backup may reach before the schedule is behind: its interval, plus the starting deadline, plus 15 minutes (the BackupFresh condition's limit).", scheduleLabels, nil)
	descLastRun = prometheus.NewDesc("etcd_operator_backup_schedule_last_run_result",
		"1 for the result of the schedule's last run (succeeded, failed, running), 0 for the others.", append(scheduleLabels, "result"), nil)
	descCondition = prometheus.NewDesc("etcd_operator_backup_schedule_condition",
		"Always 1: one series per condition type of an EtcdBackupSchedule with its current status and reason.", append(scheduleLabels, "type", "status", "reason"), nil)

	// The newest finished restore drill (status.lastDrill).
	descDrillPassed = prometheus.NewDesc("etcd_operator_drill_last_passed",
		"1 if the schedule's newest finished restore drill passed, 0 if it failed.", scheduleLabels, nil)
	descDrillCompletion = prometheus.NewDesc("etcd_operator_drill_last_completion_timestamp_seconds",
		"Unix time the schedule's newest restore drill finished.", scheduleLabels, nil)
	descDrillSuccess = prometheus.NewDesc("etcd_operator_drill_last_success_timestamp_seconds",
		"Unix time the schedule's newest passed restore drill finished (as far as this operator process has seen).", scheduleLabels, nil)
	descDrillRTO = prometheus.NewDesc("etcd_operator_drill_last_rto_seconds",
		"Time to restore of the schedule's newest restore drill: from its start until the drill cluster was Available and verified.", scheduleLabels, nil)
	descDrillBackupAge = prometheus.NewDesc("etcd_operator_drill_last_backup_age_seconds",
		"Age of the backup the newest restore drill restored, when it started.", scheduleLabels, nil)
	descDrillRecoveryPoint = prometheus.NewDesc("etcd_operator_drill_last_recovery_point_age_seconds",
		"Recovery point the newest restore drill proved: how long before its start the newest change it restored was made (the backup's age, or with continuous capture the newest captured revision's).", scheduleLabels, nil)
)

// scheduleCollector exports the state of every EtcdBackupSchedule it can list.
type scheduleCollector struct {
	reader client.Reader
	// drillSuccess remembers the newest passed drill per schedule UID: status.lastDrill holds
	// only the newest drill, which may have failed since.
	mu           sync.Mutex
	drillSuccess map[types.UID]time.Time
}

// RegisterMetrics registers the schedule metrics with reg; every scrape lists the schedules
// through r (the manager's informer cache).
func RegisterMetrics(reg prometheus.Registerer, r client.Reader) error {
	return opmetrics.Register(reg, append(captureCollectors(), &scheduleCollector{reader: r, drillSuccess: map[types.UID]time.Time{}})...)
}

// SetupMetrics registers the metrics with controller-runtime's registry, which the manager
// serves on --metrics-bind-address; cmd/backup-operator passes it next to Setup.
func SetupMetrics(mgr ctrl.Manager, _ *options.Options) error {
	return RegisterMetrics(metrics.Registry, mgr.GetCache())
}

// Describe implements prometheus.Collector.
func (c *scheduleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSuspended, descLastSchedule, descNextSchedule, descLastSuccess, descMaxAge,
		descLastRun, descCondition, descDrillPassed, descDrillCompletion, descDrillSuccess, descDrillRTO, descDrillBackupAge, descDrillRecoveryPoint} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *scheduleCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var list etcdv1beta2.EtcdBackupScheduleList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(descSuspended, err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[types.UID]bool{}
	for i := range list.Items {
		seen[list.Items[i].UID] = true
		c.collect(ch, &list.Items[i])
	}
	for uid := range c.drillSuccess {
		if !seen[uid] {
			delete(c.drillSuccess, uid)
		}
	}
}

func (c *scheduleCollector) collect(ch chan<- prometheus.Metric, s *etcdv1beta2.EtcdBackupSchedule) {
	cluster := ""
	if ref := s.Spec.BackupTemplate.Spec.EtcdCluster; ref != nil {
		cluster = ref.Name
	}
	lv := []string{s.Namespace, cluster, s.Name}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv[:3:3], extra...)...)
	}
	timestamp := func(d *prometheus.Desc, t *time.Time) {
		if t != nil && !t.IsZero() {
			gauge(d, float64(t.UnixNano())/1e9)
		}
	}
	st := &s.Status
	suspended := 0.0
	if s.Spec.Suspend != nil && *s.Spec.Suspend {
		suspended = 1
	}
	gauge(descSuspended, suspended)
	timestamp(descLastSchedule, timeOf(st.LastScheduleTime))
	timestamp(descNextSchedule, timeOf(st.NextScheduleTime))
	timestamp(descLastSuccess, timeOf(st.LastSuccessfulTime))
	if sched, err := Parse(s.Spec.Schedule, s.Spec.TimeZone); err == nil {
		last := time.Now()
		if t := timeOf(st.LastSuccessfulTime); t != nil {
			last = *t
		}
		gauge(descMaxAge, freshnessLimit(s, sched, last).Seconds())
	}
	if result := lastRunResult(st); result != "" {
		for _, r := range []string{RunSucceeded, RunFailed, RunRunning} {
			v := 0.0
			if r == result {
				v = 1
			}
			gauge(descLastRun, v, r)
		}
	}
	for _, cond := range st.Conditions {
		gauge(descCondition, 1, cond.Type, string(cond.Status), cond.Reason)
	}
	c.collectDrill(gauge, timestamp, s)
}

func (c *scheduleCollector) collectDrill(gauge func(*prometheus.Desc, float64, ...string), timestamp func(*prometheus.Desc, *time.Time), s *etcdv1beta2.EtcdBackupSchedule) {
	d := s.Status.LastDrill
	if d == nil {
		return
	}
	passed := 0.0
	if d.Passed {
		passed = 1
	}
	gauge(descDrillPassed, passed)
	done := timeOf(d.CompletionTime)
	timestamp(descDrillCompletion, done)
	if d.Passed && done != nil && done.After(c.drillSuccess[s.UID]) {
		c.drillSuccess[s.UID] = *done
	}
	if t, ok := c.drillSuccess[s.UID]; ok {
		timestamp(descDrillSuccess, &t)
	}
	if d.TimeToRestore != nil {
		gauge(descDrillRTO, d.TimeToRestore.Seconds())
	}
	if d.BackupAge != nil {
		gauge(descDrillBackupAge, d.BackupAge.Seconds())
	}
	if d.RecoveryPointAge != nil {
		gauge(descDrillRecoveryPoint, d.RecoveryPointAge.Seconds())
	}
}

// lastRunResult is the result of the schedule's last run: running while a backup it created
// has not finished, succeeded if the newest success is not older than the last run, else
// failed; "" before the first run.
func lastRunResult(st *etcdv1beta2.BackupScheduleStatus) string {
	switch {
	case st.LastScheduleTime == nil:
		return ""
	case len(st.Active) > 0:
		return RunRunning
	case st.LastSuccessfulTime != nil && !st.LastSuccessfulTime.Before(st.LastScheduleTime):
		return RunSucceeded
	default:
		return RunFailed
	}
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}
