package etcdrestore

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
)

// Metrics of the EtcdRestore controller (docs/monitoring.md); cluster_namespace is the
// namespace of the restore and of the cluster it restores, reason a condition reason constant.
// Registered by RegisterMetrics, only in the restore-operator binary.
var (
	restoresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_restore_total",
		Help: "Finished restores by outcome (succeeded, failed) and condition reason.",
	}, []string{"cluster_namespace", "outcome", "reason"})
	restoreDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_operator_restore_duration_seconds",
		Help:    "Time to restore (RTO) of successful restores: from start until the cluster was Available and verified.",
		Buckets: prometheus.ExponentialBuckets(10, 2, 10),
	}, []string{"cluster_namespace"})
)

// RegisterMetrics registers the EtcdRestore controller's metrics with reg.
func RegisterMetrics(reg prometheus.Registerer) error {
	return opmetrics.Register(reg, append([]prometheus.Collector{restoresTotal, restoreDuration}, workpool.Collectors()...)...)
}

// SetupMetrics registers the metrics with controller-runtime's registry, which the manager
// serves on --metrics-bind-address; cmd/restore-operator passes it next to Setup.
func SetupMetrics(ctrl.Manager, *options.Options) error {
	return RegisterMetrics(metrics.Registry)
}
