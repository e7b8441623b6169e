package etcdbackup

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// Metrics of the EtcdBackup controller (docs/monitoring.md); cluster_namespace and cluster name
// the EtcdCluster backed up, reason is a condition reason constant. Registered by
// RegisterMetrics, only in the backup-operator binary.
var (
	backupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "etcd_operator_backup_duration_seconds",
		Help: "Duration of verified backups (snapshot and upload), by storage type.",
		// 0.5 s to ~2.3 h.
		Buckets: prometheus.ExponentialBuckets(0.5, 2.5, 10),
	}, []string{"storage"})
	backupBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_backup_bytes_total",
		Help: "Bytes of verified backups stored, by cluster.",
	}, []string{"cluster_namespace", "cluster"})
	backupLastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_backup_last_size_bytes",
		Help: "Size of the newest verified backup, by cluster.",
	}, []string{"cluster_namespace", "cluster"})
	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_backup_last_success_timestamp_seconds",
		Help: "Unix time of the newest verified backup, by cluster.",
	}, []string{"cluster_namespace", "cluster"})
	backupFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_backup_failures_total",
		Help: "Failed backup attempts, by condition reason.",
	}, []string{"reason"})
)

// RegisterMetrics registers the EtcdBackup controller's metrics, the worker pool's
// (etcd_operator_work_*) and the object store metrics (etcd_operator_backend_*, pkg/backend) with reg, and instruments the stores the controller
// opens from then on.
func RegisterMetrics(reg prometheus.Registerer) error {
	cs := append([]prometheus.Collector{backupDuration, backupBytes, backupLastSize, backupLastSuccess, backupFailures}, workpool.Collectors()...)
	if err := opmetrics.Register(reg, cs...); err != nil {
		return err
	}
	m, err := backend.NewMetrics(reg)
	if err != nil {
		return err
	}
	backuptarget.InstrumentStores(m)
	return nil
}

// SetupMetrics registers the metrics with controller-runtime's registry, which the manager
// serves on --metrics-bind-address; cmd/backup-operator passes it next to Setup.
func SetupMetrics(ctrl.Manager, *options.Options) error {
	return RegisterMetrics(metrics.Registry)
}
