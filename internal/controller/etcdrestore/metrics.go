package etcdrestore

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	restoresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_restore_total",
		Help: "Finished restores by outcome (succeeded, failed) and condition reason.",
	}, []string{"namespace", "outcome", "reason"})
	restoreDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_restore_duration_seconds",
		Help:    "Time to restore (RTO) of successful restores: from start until the cluster was Available and verified.",
		Buckets: prometheus.ExponentialBuckets(10, 2, 10),
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(restoresTotal, restoreDuration)
}
