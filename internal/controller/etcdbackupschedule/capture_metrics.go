package etcdbackupschedule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcd-operator/etcd-operator/pkg/capture"
)

// Metrics of the continuous captures this process runs (only the leader runs them), with the
// schedule metrics' labels (cluster_namespace, cluster, schedule); docs/monitoring.md. They are live values, not read from status
// (which is written every 30 s).
var (
	captureUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_up",
		Help: "1 while the schedule's continuous capture watches the cluster and stores segments, 0 while it is stopped and retrying.",
	}, scheduleLabels)
	captureRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_revision",
		Help: "Newest etcd revision the capture stored in a verified segment.",
	}, scheduleLabels)
	captureTimestamp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_last_timestamp_seconds",
		Help: "Unix time the capture received the newest revision it stored.",
	}, scheduleLabels)
	captureEtcdRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_etcd_revision",
		Help: "Newest revision of the cluster the capture has seen; minus etcd_operator_capture_revision, the lag in revisions.",
	}, scheduleLabels)
	captureLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_lag_seconds",
		Help: "How long the oldest change received but not stored yet has waited (0 when everything received is stored): what losing the operator would cost now, beyond what etcd still holds.",
	}, scheduleLabels)
	capturePending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_capture_pending_bytes",
		Help: "Bytes of closed segments waiting for the store (bounded by maxBufferedSize).",
	}, scheduleLabels)
	captureSegments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_capture_segments_total",
		Help: "Segments the capture stored.",
	}, scheduleLabels)
	captureBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_capture_bytes_total",
		Help: "Bytes of segments the capture stored.",
	}, scheduleLabels)
)

func captureCollectors() []prometheus.Collector {
	return []prometheus.Collector{captureUp, captureRevision, captureTimestamp, captureEtcdRevision, captureLag, capturePending, captureSegments, captureBytes}
}

// labels are the metric labels of a capture.
func (run *captureRun) labels() []string {
	cluster := ""
	if ref := run.want.backup.EtcdCluster; ref != nil {
		cluster = ref.Name
	}
	return []string{run.key.Namespace, cluster, run.key.Name}
}

func setCaptureUp(lv []string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	captureUp.WithLabelValues(lv...).Set(v)
}

// observeCapture records p, the progress of a capture (labels lv); prev is the progress
// recorded before in the same run of the capture (zero at its start).
func observeCapture(lv []string, p, prev capture.Progress) {
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

// forgetCaptureMetrics deletes the series of a capture that stopped for good.
func forgetCaptureMetrics(lv []string) {
	for _, c := range []interface {
		DeleteLabelValues(...string) bool
	}{captureUp, captureRevision, captureTimestamp, captureEtcdRevision, captureLag, capturePending, captureSegments, captureBytes} {
		c.DeleteLabelValues(lv...)
	}
}
