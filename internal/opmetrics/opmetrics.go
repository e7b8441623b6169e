// Package opmetrics holds what the operators' Prometheus metrics share: the label names, the
// build-info metric every binary exports, idempotent registration and a gauge vector for
// one-hot "info" and "condition" series whose label values change over time.
//
// Conventions (docs/monitoring.md):
//   - every metric starts with etcd_operator_;
//   - the namespace of the object a series is about is the label cluster_namespace, never
//     namespace: Prometheus sets namespace (and pod, service, job, instance) to the scraped
//     operator's own, so an object's namespace under that name would be renamed to
//     exported_namespace or, with honor_labels, overwrite the target's;
//   - label values are object names (bounded by the objects in the cluster, as in
//     kube-state-metrics) or fixed constants (reasons, phases, condition types); never free
//     text such as messages or URLs.
package opmetrics

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcd-operator/etcd-operator/internal/version"
)

// Label names shared by the metrics of all operators.
const (
	// LabelNamespace is the namespace of the EtcdCluster (and of the EtcdBackup, schedule or
	// restore, which live next to it).
	LabelNamespace = "cluster_namespace"
	// LabelCluster is the name of the EtcdCluster.
	LabelCluster = "cluster"
)

// Register registers cs with reg. A collector already registered with reg (a second call in one
// process, as in tests) is not an error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
				continue
			}
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}

// NewBuildInfo returns etcd_operator_build_info{version,revision,goversion,binary} = 1 for
// binary, from internal/version.
func NewBuildInfo(binary string) prometheus.Collector {
	i := version.Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_build_info",
		Help: "Always 1; the labels describe the build of the operator binary.",
	}, []string{"version", "revision", "goversion", "binary"})
	g.WithLabelValues(i.Version, i.Commit, i.GoVersion, binary).Set(1)
	return g
}

// InfoVec is a gauge vector of one-hot series: for each key (an object, or an object and a
// condition type) exactly one series, value 1, with the key's current label values. Setting new
// values deletes the key's previous series, so an upgraded cluster does not keep reporting its
// old version.
type InfoVec struct {
	*prometheus.GaugeVec
	mu   sync.Mutex
	last map[string][]string // key -> label values of its series
}

// NewInfoVec returns an InfoVec; labels are the label names of its series.
func NewInfoVec(opts prometheus.GaugeOpts, labels []string) *InfoVec {
	return &InfoVec{GaugeVec: prometheus.NewGaugeVec(opts, labels), last: map[string][]string{}}
}

// Set makes values the only series of key.
func (v *InfoVec) Set(key string, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if prev, ok := v.last[key]; ok && !slices.Equal(prev, values) {
		v.DeleteLabelValues(prev...)
	}
	v.last[key] = values
	v.WithLabelValues(values...).Set(1)
}

// Forget deletes the series of every key for which drop returns true.
func (v *InfoVec) Forget(drop func(key string) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, prev := range v.last {
		if drop(k) {
			v.DeleteLabelValues(prev...)
			delete(v.last, k)
		}
	}
}
