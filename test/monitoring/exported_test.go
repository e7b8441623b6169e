// Package monitoring checks the monitoring the project ships (docs/monitoring.md) against the
// code: the PrometheusRule's alerts parse as `promtool check rules` would parse them, every
// metric and label that the alerts and the Grafana dashboard query is one the operators export,
// every metric the README and docs/ name exists, and every exported one is described in
// docs/monitoring.md.
package monitoring

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdcluster"
	"github.com/etcd-operator/etcd-operator/internal/controller/etcdrestore"
	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
)

// recorder is a prometheus.Registerer that keeps the name and variable labels of every metric
// registered with it, from the collectors' own descriptions.
type recorder map[string]described

type described struct {
	labels    []string
	histogram bool
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

func (r recorder) Register(c prometheus.Collector) error {
	_, histogram := c.(*prometheus.HistogramVec)
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			panic("unparsable descriptor " + d.String())
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		r[m[1]] = described{labels: labels, histogram: histogram}
	}
	return nil
}

func (r recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r recorder) Unregister(prometheus.Collector) bool { return false }

// histogramSuffixes are the series a histogram is exposed as.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// exported returns every metric the three binaries register (each package's RegisterMetrics
// and the build info), with its labels; a histogram's _bucket series also has le.
func exported(t *testing.T) map[string][]string {
	t.Helper()
	r := recorder{}
	for name, register := range map[string]func() error{
		"etcdcluster":        func() error { return etcdcluster.RegisterMetrics(r) },
		"etcdbackup":         func() error { return etcdbackup.RegisterMetrics(r) },
		"etcdbackupschedule": func() error { return etcdbackupschedule.RegisterMetrics(r, nil) },
		"etcdrestore":        func() error { return etcdrestore.RegisterMetrics(r) },
		"build info":         func() error { return opmetrics.Register(r, opmetrics.NewBuildInfo("test")) },
	} {
		if err := register(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	out := map[string][]string{}
	for name, d := range r {
		out[name] = d.labels
		if d.histogram {
			for _, s := range histogramSuffixes {
				out[name+s] = d.labels
			}
			out[name+"_bucket"] = append(append([]string{}, d.labels...), "le")
		}
	}
	return out
}

// TestExportedMetricsConventions: every metric of the operators carries the etcd_operator_
// prefix and none uses a label that the scrape sets.
func TestExportedMetricsConventions(t *testing.T) {
	m := exported(t)
	if len(m) < 20 {
		t.Fatalf("found only %d metrics: %v", len(m), m)
	}
	for name, labels := range m {
		if !strings.HasPrefix(name, "etcd_operator_") {
			t.Errorf("%s lacks the etcd_operator_ prefix", name)
		}
		for _, l := range labels {
			if scrapeLabels[l] && l != "le" {
				t.Errorf("%s has the label %s, which Prometheus sets on the scrape", name, l)
			}
		}
	}
}
