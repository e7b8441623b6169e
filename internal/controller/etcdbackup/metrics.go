package etcdbackup

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

var (
	backupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "etcd_backup_duration_seconds",
		Help: "Duration of verified backups (snapshot and upload), by storage type.",
		// 0.5 s to ~2.3 h.
		Buckets: prometheus.ExponentialBuckets(0.5, 2.5, 10),
	}, []string{"storage"})
	backupBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_bytes_total",
		Help: "Bytes of verified backups stored, by cluster.",
	}, []string{"namespace", "cluster"})
	backupLastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_last_size_bytes",
		Help: "Size of the newest verified backup, by cluster.",
	}, []string{"namespace", "cluster"})
	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_last_success_timestamp_seconds",
		Help: "Unix time of the newest verified backup, by cluster.",
	}, []string{"namespace", "cluster"})
	backupFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_failures_total",
		Help: "Failed backup attempts, by condition reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(backupDuration, backupBytes, backupLastSize, backupLastSuccess, backupFailures)
	m, err := backend.NewMetrics(metrics.Registry)
	if err == nil {
		backendMetrics = m
	}
}
