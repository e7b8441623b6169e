package etcdbackupschedule

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/pkg/capture"
)

// Metrics of the continuous captures this process runs (only the leader runs them), by the
// schedule's namespace and name; docs/monitoring.md. They are live values, not read from status
// (which is written every 30 s).
var (
	captureLabels = []string{"namespace", "schedule"}
	captureUp     = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_up",
		Help: "1 while the schedule's continuous capture watches the cluster and stores segments, 0 while it is stopped and retrying.",
	}, captureLabels)
	captureRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_revision",
		Help: "Newest etcd revision the capture stored in a verified segment.",
	}, captureLabels)
	captureTimestamp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_last_timestamp_seconds",
		Help: "Unix time the capture received the newest revision it stored.",
	}, captureLabels)
	captureEtcdRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_etcd_revision",
		Help: "Newest revision of the cluster the capture has seen; minus etcd_operator_capture_revision, the lag in revisions.",
	}, captureLabels)
	captureLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_lag_seconds",
		Help: "How long the oldest change received but not stored yet has waited (0 when everything received is stored): what losing the operator would cost now, beyond what etcd still holds.",
	}, captureLabels)
	capturePending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_pending_bytes",
		Help: "Bytes of closed segments waiting for the store (bounded by maxBufferedSize).",
	}, captureLabels)
	captureSegments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_capture_segments_total",
		Help: "Segments the capture stored.",
	}, captureLabels)
	captureBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_capture_bytes_total",
		Help: "Bytes of segments the capture stored.",
	}, captureLabels)
)

func captureCollectors() []prometheus.Collector {
	return []prometheus.Collector{captureUp, captureRevision, captureTimestamp, captureEtcdRevision, captureLag, capturePending, captureSegments, captureBytes}
}

func setCaptureUp(key types.NamespacedName, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	captureUp.WithLabelValues(key.Namespace, key.Name).Set(v)
}

// observeCapture records p, the progress of the capture of schedule key; prev is the progress
// recorded before in the same run of the capture (zero at its start).
func observeCapture(key types.NamespacedName, p, prev capture.Progress) {
	lv := []string{key.Namespace, key.Name}
	if p.Segments > 0 {
		captureRevision.WithLabelValues(lv...).Set(float64(p.UploadedRevision))
		captureTimestamp.WithLabelValues(lv...).Set(float64(p.UploadedTime.UnixNano()) / 1e9)
	}
	captureEtcdRevision.WithLabelValues(lv...).Set(float64(p.EtcdRevision))
	captureLag.WithLabelValues(lv...).Set(p.Lag.Seconds())
	capturePending.WithLabelValues(lv...).Set(float64(p.PendingBytes))
	if d := p.Segments - prev.Segments; d > 0 {
		captureSegments.WithLabelValues(lv...).Add(float64(d))
	}
	if d := p.UploadedBytes - prev.UploadedBytes; d > 0 {
		captureBytes.WithLabelValues(lv...).Add(float64(d))
	}
}

// forgetCaptureMetrics deletes the series of schedule key, whose capture stopped for good.
func forgetCaptureMetrics(key types.NamespacedName) {
	for _, c := range []interface {
		DeleteLabelValues(...string) bool
	}{captureUp, captureRevision, captureTimestamp, captureEtcdRevision, captureLag, capturePending, captureSegments, captureBytes} {
		c.DeleteLabelValues(key.Namespace, key.Name)
	}
}
