package etcdcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Metrics of the EtcdCluster controller, on controller-runtime's registry (reconcile counts,
// errors and durations per controller come with it).
var (
	membersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_members",
		Help: "Members of an EtcdCluster by state (ready: started, voting and healthy; unready: the others).",
	}, []string{"namespace", "name", "state"})
	phaseGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_phase",
		Help: "1 for the current display phase of an EtcdCluster, 0 for the others.",
	}, []string{"namespace", "name", "phase"})
	membershipChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_cluster_member_changes_total",
		Help: "Member changes made by the operator (add, promote, remove, pod create/delete, upgrade), by kind.",
	}, []string{"namespace", "name", "action"})
)

func init() {
	metrics.Registry.MustRegister(membersGauge, phaseGauge, membershipChanges)
}

var allPhases = []etcdv1beta2.ClusterPhase{
	etcdv1beta2.ClusterPhaseCreating, etcdv1beta2.ClusterPhaseRunning, etcdv1beta2.ClusterPhaseScaling,
	etcdv1beta2.ClusterPhaseUpgrading, etcdv1beta2.ClusterPhaseDegraded, etcdv1beta2.ClusterPhaseFailed, etcdv1beta2.ClusterPhasePaused,
}

// recordMetrics exports the observed state of c.
func recordMetrics(c *etcdv1beta2.EtcdCluster) {
	membersGauge.WithLabelValues(c.Namespace, c.Name, "ready").Set(float64(len(c.Status.Members.Ready)))
	membersGauge.WithLabelValues(c.Namespace, c.Name, "unready").Set(float64(len(c.Status.Members.Unready)))
	for _, p := range allPhases {
		v := 0.0
		if c.Status.Phase == p {
			v = 1
		}
		phaseGauge.WithLabelValues(c.Namespace, c.Name, string(p)).Set(v)
	}
}

// forgetMetrics drops the series of a deleted cluster.
func forgetMetrics(namespace, name string) {
	labels := map[string]string{"namespace": namespace, "name": name}
	membersGauge.DeletePartialMatch(labels)
	phaseGauge.DeletePartialMatch(labels)
	membershipChanges.DeletePartialMatch(labels)
}
