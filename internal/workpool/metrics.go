package workpool

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the pools (docs/monitoring.md), by pool name: "backup" in the backup-operator,
// "verify" in the restore-operator. The controllers that use a pool register them.
var (
	queuedOps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_work_queued",
		Help: "Operations (backups, backup checks) waiting for a worker, by pool.",
	}, []string{"pool"})
	runningOps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_work_running",
		Help: "Operations (backups, backup checks) running in a worker, by pool.",
	}, []string{"pool"})
)

// Collectors returns the pools' metrics, for the RegisterMetrics of a controller that uses one.
func Collectors() []prometheus.Collector { return []prometheus.Collector{queuedOps, runningOps} }

type poolMetrics struct {
	queued, running prometheus.Gauge
}

func metricsFor(name string) *poolMetrics {
	return &poolMetrics{queued: queuedOps.WithLabelValues(name), running: runningOps.WithLabelValues(name)}
}
