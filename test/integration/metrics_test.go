package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Labels the scrape sets (Prometheus target labels and the Prometheus Operator's); a series
// of the operators must not carry them, or Prometheus renames them to exported_<name>.
var scrapeLabels = []string{"namespace", "pod", "service", "job", "instance", "container", "endpoint"}

// TestBinaryMetrics runs the three binaries against the apiserver with an EtcdCluster and an
// EtcdBackupSchedule in it, and reads each binary's /metrics as Prometheus would:
//   - every binary exports etcd_operator_build_info{binary=<its name>} 1;
//   - each binary exports exactly its own metrics: the etcd operator etcd_operator_cluster_*
//     (desired members 3 for the cluster of size 3), the backup operator
//     etcd_operator_backup_* (the schedule's series), and neither of the others nor the
//     restore operator carries another binary's families;
//   - every etcd_operator_* family starts with the one prefix and no series carries a label the
//     scrape sets (namespace, pod, job, ...);
//   - promlint (the library behind `promtool check metrics`) finds no problem in the output.
func TestBinaryMetrics(t *testing.T) {
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	cluster := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	schedule := &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "hourly"},
		Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "0 * * * *", BackupTemplate: etcdv1beta2.BackupTemplateSpec{
			Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
				BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/c", AWSSecret: "aws"}}}}}}
	if err := env.Client.Create(t.Context(), cluster); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), schedule); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		binary string
		// want: families that must appear (with at least one series); forbidden: prefixes
		// of families that must not.
		want      []string
		forbidden []string
		// check says what is still wrong with the export, nil once right; polled like want:
		// other tests' clusters may fill a family before this test's series appears.
		check func(fams map[string]*dto.MetricFamily) error
	}{
		{
			binary:    "etcd-operator",
			want:      []string{"etcd_operator_cluster_members", "etcd_operator_cluster_desired_members", "etcd_operator_cluster_info", "etcd_operator_cluster_phase", "etcd_operator_cluster_condition"},
			forbidden: []string{"etcd_operator_backup_", "etcd_operator_backend_", "etcd_operator_drill_", "etcd_operator_restore_"},
			check: func(fams map[string]*dto.MetricFamily) error {
				if v, ok := value(fams["etcd_operator_cluster_desired_members"], map[string]string{"cluster_namespace": ns.Name, "cluster": "c"}); !ok || v != 3 {
					return fmt.Errorf("etcd_operator_cluster_desired_members{cluster_namespace=%q,cluster=\"c\"} = %v (found %v), want 3", ns.Name, v, ok)
				}
				return nil
			},
		},
		{
			binary:    "backup-operator",
			want:      []string{"etcd_operator_backup_schedule_suspended", "etcd_operator_backup_schedule_condition"},
			forbidden: []string{"etcd_operator_cluster_", "etcd_operator_restore_"},
			check: func(fams map[string]*dto.MetricFamily) error {
				if v, ok := value(fams["etcd_operator_backup_schedule_suspended"], map[string]string{"cluster_namespace": ns.Name, "cluster": "c", "schedule": "hourly"}); !ok || v != 0 {
					return fmt.Errorf("etcd_operator_backup_schedule_suspended of %s/hourly = %v (found %v), want 0", ns.Name, v, ok)
				}
				return nil
			},
		},
		{
			binary:    "restore-operator",
			forbidden: []string{"etcd_operator_cluster_", "etcd_operator_backup_", "etcd_operator_backend_", "etcd_operator_drill_"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.binary, func(t *testing.T) {
			op := startOperator(t, tt.binary, kubeconfig)
			metricsAddr, logs := op.metrics, op.logs

			var body []byte
			var fams map[string]*dto.MetricFamily
			err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				b, f, err := scrape(ctx, "http://"+metricsAddr+"/metrics")
				if err != nil {
					return false, nil //nolint:nilerr // not serving yet: keep polling until the timeout.
				}
				body, fams = b, f
				for _, w := range tt.want {
					if len(fams[w].GetMetric()) == 0 {
						return false, nil
					}
				}
				return tt.check == nil || tt.check(fams) == nil, nil
			})
			if err != nil {
				var wrong error
				if tt.check != nil && fams != nil {
					wrong = tt.check(fams)
				}
				t.Fatalf("%s never exported all of %v right (%v); got %v\nlogs:\n%s", tt.binary, tt.want, wrong, names(fams), logs.String())
			}
			if v, ok := value(fams["etcd_operator_build_info"], map[string]string{"binary": tt.binary}); !ok || v != 1 {
				t.Errorf("etcd_operator_build_info{binary=%q} = %v (found %v), want 1", tt.binary, v, ok)
			}
			for name, f := range fams {
				for _, p := range tt.forbidden {
					if strings.HasPrefix(name, p) {
						t.Errorf("%s exports %s, a metric of another binary", tt.binary, name)
					}
				}
				if strings.HasPrefix(name, "etcd_") && !strings.HasPrefix(name, "etcd_operator_") {
					t.Errorf("%s: metric %s lacks the etcd_operator_ prefix", tt.binary, name)
				}
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						for _, s := range scrapeLabels {
							if strings.HasPrefix(name, "etcd_operator_") && l.GetName() == s {
								t.Errorf("%s: %s has the label %s, which the scrape sets", tt.binary, name, s)
							}
						}
					}
				}
			}
			problems, err := promlint.New(bytes.NewReader(body)).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("%s: promlint: %s: %s", tt.binary, p.Metric, p.Text)
			}
			t.Logf("%s exports %d families, %d of them etcd_operator_*: %v", tt.binary, len(fams), len(own(fams)), own(fams))
		})
	}
}

// scrape reads the text exposition at url.
func scrape(ctx context.Context, url string) ([]byte, map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	return body, fams, err
}

// value is the value of the first series of f whose labels include want.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	for _, m := range f.GetMetric() {
		match := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

func names(fams map[string]*dto.MetricFamily) []string {
	out := make([]string, 0, len(fams))
	for n := range fams {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func own(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for _, n := range names(fams) {
		if strings.HasPrefix(n, "etcd_operator_") {
			out = append(out, n)
		}
	}
	return out
}
