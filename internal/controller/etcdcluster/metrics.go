package etcdcluster

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/workpool"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Metrics of the EtcdCluster controller (docs/monitoring.md). Labels: cluster_namespace and
// cluster name the EtcdCluster (one series set per cluster, as kube-state-metrics does per
// object); the other label values are constants (states, phases, condition types and reasons,
// etcd versions). Registered by RegisterMetrics, only in the etcd-operator binary.
var (
	membersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_members",
		Help: "Members of an EtcdCluster by state (ready: started, voting and healthy; unready: the others).",
	}, []string{"cluster_namespace", "cluster", "state"})
	desiredMembersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_desired_members",
		Help: "Members an EtcdCluster should have (spec.size).",
	}, []string{"cluster_namespace", "cluster"})
	phaseGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_phase",
		Help: "1 for the current display phase of an EtcdCluster, 0 for the others.",
	}, []string{"cluster_namespace", "cluster", "phase"})
	clusterInfo = opmetrics.NewInfoVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_info",
		Help: "Always 1: the etcd version the members run (empty until observed) and the version the cluster is moving to.",
	}, []string{"cluster_namespace", "cluster", "version", "target_version"})
	clusterCondition = opmetrics.NewInfoVec(prometheus.GaugeOpts{
		Name: "etcd_operator_cluster_condition",
		Help: "Always 1: one series per condition type of an EtcdCluster with its current status and reason.",
	}, []string{"cluster_namespace", "cluster", "type", "status", "reason"})
	membershipChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_cluster_member_changes_total",
		Help: "Member changes made by the operator (add, promote, remove, pod create/delete, upgrade), by kind.",
	}, []string{"cluster_namespace", "cluster", "action"})
	maintenanceSteps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_operator_cluster_maintenance_total",
		Help: "Upkeep steps the operator took (Compact and Disarm during NOSPACE recovery, Defragment), by action.",
	}, []string{"cluster_namespace", "cluster", "action"})
)

// RegisterMetrics registers the EtcdCluster controller's metrics with reg.
func RegisterMetrics(reg prometheus.Registerer) error {
	return opmetrics.Register(reg, append([]prometheus.Collector{membersGauge, desiredMembersGauge, phaseGauge, clusterInfo, clusterCondition, membershipChanges, maintenanceSteps},
		workpool.Collectors()...)...)
}

// SetupMetrics registers the metrics with controller-runtime's registry, which the manager
// serves on --metrics-bind-address; cmd/etcd-operator passes it next to Setup.
func SetupMetrics(ctrl.Manager, *options.Options) error {
	return RegisterMetrics(metrics.Registry)
}

var allPhases = []etcdv1beta2.ClusterPhase{
	etcdv1beta2.ClusterPhaseCreating, etcdv1beta2.ClusterPhaseRunning, etcdv1beta2.ClusterPhaseScaling,
	etcdv1beta2.ClusterPhaseUpgrading, etcdv1beta2.ClusterPhaseDegraded, etcdv1beta2.ClusterPhaseFailed, etcdv1beta2.ClusterPhasePaused,
}

// recordMetrics exports the observed state of c.
func recordMetrics(c *etcdv1beta2.EtcdCluster) {
	ns, name := c.Namespace, c.Name
	membersGauge.WithLabelValues(ns, name, "ready").Set(float64(len(c.Status.Members.Ready)))
	membersGauge.WithLabelValues(ns, name, "unready").Set(float64(len(c.Status.Members.Unready)))
	desiredMembersGauge.WithLabelValues(ns, name).Set(float64(c.Spec.Size))
	for _, p := range allPhases {
		v := 0.0
		if c.Status.Phase == p {
			v = 1
		}
		phaseGauge.WithLabelValues(ns, name, string(p)).Set(v)
	}
	key := ns + "/" + name
	clusterInfo.Set(key, ns, name, c.Status.CurrentVersion, c.Status.TargetVersion)
	for _, cond := range c.Status.Conditions {
		clusterCondition.Set(key+"/"+cond.Type, ns, name, cond.Type, string(cond.Status), cond.Reason)
	}
}

// forgetMetrics drops the series of a deleted cluster.
func forgetMetrics(namespace, name string) {
	labels := map[string]string{opmetrics.LabelNamespace: namespace, opmetrics.LabelCluster: name}
	membersGauge.DeletePartialMatch(labels)
	desiredMembersGauge.DeletePartialMatch(labels)
	phaseGauge.DeletePartialMatch(labels)
	membershipChanges.DeletePartialMatch(labels)
	maintenanceSteps.DeletePartialMatch(labels)
	key := namespace + "/" + name
	clusterInfo.Forget(func(k string) bool { return k == key })
	clusterCondition.Forget(func(k string) bool { return strings.HasPrefix(k, key+"/") })
}
