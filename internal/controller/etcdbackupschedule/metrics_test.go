package etcdbackupschedule

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestScheduleMetrics: the schedule metrics follow each schedule's status, with the cluster
// and schedule as labels: the last run's result (succeeded, failed, running), the newest
// success and how old it may get (the hourly schedule's interval + 15 min), suspension, and
// the newest restore drill with its RTO; a failed drill keeps the time of the last passed one.
func TestScheduleMetrics(t *testing.T) {
	at := func(hhmm string) *metav1.Time {
		tm, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Time{Time: time.Date(2026, 1, 2, tm.Hour(), tm.Minute(), 0, 0, time.UTC)}
	}
	unix := func(hhmm string) string { return fmtFloat(float64(at(hhmm).Unix())) }
	tests := []struct {
		name   string
		status etcdv1beta2.BackupScheduleStatus
		// metric (without prefix etcd_operator_) and its value in the exposition
		want    map[string]string
		missing []string
	}{
		{
			name:    "never ran",
			status:  etcdv1beta2.BackupScheduleStatus{NextScheduleTime: at("11:00")},
			want:    map[string]string{"backup_schedule_suspended": "0", "backup_schedule_next_schedule_timestamp_seconds": unix("11:00")},
			missing: []string{"backup_schedule_last_run_result", "backup_schedule_last_success_timestamp_seconds", "drill_last_passed"},
		},
		{
			name:   "last run succeeded",
			status: etcdv1beta2.BackupScheduleStatus{LastScheduleTime: at("10:00"), LastSuccessfulTime: at("10:02")},
			want: map[string]string{
				`backup_schedule_last_run_result{cluster="c",cluster_namespace="ns",result="succeeded",schedule="s"}`: "1",
				`backup_schedule_last_run_result{cluster="c",cluster_namespace="ns",result="failed",schedule="s"}`:    "0",
				"backup_schedule_last_success_timestamp_seconds":                                                      unix("10:02"),
				"backup_schedule_max_backup_age_seconds":                                                              "4500",
			},
		},
		{
			name:   "last run failed",
			status: etcdv1beta2.BackupScheduleStatus{LastScheduleTime: at("11:00"), LastSuccessfulTime: at("10:02")},
			want:   map[string]string{`backup_schedule_last_run_result{cluster="c",cluster_namespace="ns",result="failed",schedule="s"}`: "1"},
		},
		{
			name:   "running",
			status: etcdv1beta2.BackupScheduleStatus{LastScheduleTime: at("11:00"), LastSuccessfulTime: at("10:02"), Active: []string{"s-1"}},
			want:   map[string]string{`backup_schedule_last_run_result{cluster="c",cluster_namespace="ns",result="running",schedule="s"}`: "1"},
		},
		{
			name: "drill passed",
			status: etcdv1beta2.BackupScheduleStatus{LastDrill: &etcdv1beta2.DrillResult{Restore: "d1", Passed: true, CompletionTime: at("09:30"),
				TimeToRestore: &metav1.Duration{Duration: 95 * time.Second}, BackupAge: &metav1.Duration{Duration: 20 * time.Minute}}},
			want: map[string]string{"drill_last_passed": "1", "drill_last_rto_seconds": "95", "drill_last_backup_age_seconds": "1200",
				"drill_last_success_timestamp_seconds": unix("09:30"), "drill_last_completion_timestamp_seconds": unix("09:30")},
		},
		{
			name:   "drill failed after the passed one",
			status: etcdv1beta2.BackupScheduleStatus{LastDrill: &etcdv1beta2.DrillResult{Restore: "d2", Passed: false, Reason: etcdv1beta2.ReasonRestoreFailed, CompletionTime: at("10:30")}},
			want:   map[string]string{"drill_last_passed": "0", "drill_last_success_timestamp_seconds": unix("09:30"), "drill_last_completion_timestamp_seconds": unix("10:30")},
		},
		{
			name: "suspended, with a condition",
			status: etcdv1beta2.BackupScheduleStatus{Conditions: []metav1.Condition{{Type: etcdv1beta2.ScheduleConditionBackupFresh,
				Status: metav1.ConditionFalse, Reason: etcdv1beta2.ReasonBackupTooOld, Message: "free text is not a label"}}},
			want: map[string]string{"backup_schedule_suspended": "1",
				`backup_schedule_condition{cluster="c",cluster_namespace="ns",reason="BackupTooOld",schedule="s",status="False",type="BackupFresh"}`: "1"},
		},
	}
	scheme := runtime.NewScheme()
	if err := etcdv1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u1"},
		Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "0 * * * *", BackupTemplate: etcdv1beta2.BackupTemplateSpec{
			Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s).WithStatusSubresource(s).Build()
	reg := prometheus.NewPedanticRegistry()
	if err := RegisterMetrics(reg, c); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests { // in order: the drill cases build on each other
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(s), s); err != nil {
				t.Fatal(err)
			}
			s.Spec.Suspend = new(strings.Contains(tt.name, "suspended"))
			if err := c.Update(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			s.Status = tt.status
			if err := c.Status().Update(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			text := exposition(t, reg)
			for metric, v := range tt.want {
				name := "etcd_operator_" + metric
				if !strings.Contains(metric, "{") {
					name += `{cluster="c",cluster_namespace="ns",schedule="s"}`
				}
				if !strings.Contains(text, "\n"+name+" "+v+"\n") {
					t.Errorf("want %s %s in\n%s", name, v, text)
				}
			}
			for _, m := range tt.missing {
				if strings.Contains(text, "etcd_operator_"+m+"{") {
					t.Errorf("%s is exported, want none\n%s", m, text)
				}
			}
		})
	}
}

// exposition gathers reg in the text format and fails on what promlint (promtool check
// metrics) would report.
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// fmtFloat formats v as the text exposition does.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
