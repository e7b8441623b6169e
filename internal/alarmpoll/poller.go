// Package alarmpoll wakes the EtcdCluster controller when etcd raises an alarm. An alarm
// (NOSPACE, CORRUPT) changes no Kubernetes object, so no watch reports it: the Poller asks one
// started member of each Available cluster for etcd's /health every few seconds and sends a
// generic event for the cluster when etcd names an alarm. The controller watches the events
// (WatchesRawSource(source.Channel(p.Events(), ...))); its pass reports the alarm and recovers
// from it. The Poller reads the manager's cache and changes nothing itself.
package alarmpoll

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

const (
	// pollInterval is how often the operator asks one member of each Available cluster
	// whether etcd raised an alarm. A NOSPACE alarm changes no Kubernetes object (the
	// readiness probe leaves it out on purpose, so that reads go on) and the steady pass comes
	// every requeueSteady: without the poll, a quota filled between two passes would refuse
	// writes for up to a minute (52 s in the chaos kind nospace-under-load, seed 867144199).
	pollInterval = 5 * time.Second
	// probeTimeout bounds one member's answer; a member that does not answer in time is
	// the passes' business, not the poll's.
	probeTimeout = 2 * time.Second
	// pollParallel members are asked at once, so that 50 clusters take one round trip
	// each in a handful of batches.
	pollParallel = 8
	// eventBuffer is how many wake-ups wait for the controller before the poll blocks.
	eventBuffer = 64
)

// Poller is a leader-only manager.Runnable: every interval it asks one started member of each
// Available cluster that reports no alarm yet for its /health, and wakes the cluster's
// reconcile (a generic event on Events) when etcd names an alarm. It reads the manager's cache
// and changes nothing itself: the pass that follows reports the alarm and recovers from it as
// it would at its steady period.
type Poller struct {
	reader   client.Reader
	probe    Probe
	interval time.Duration
	events   chan event.GenericEvent
}

// New returns a Poller that lists EtcdClusters and their pods through reader (the manager's
// cached client) and asks members with probe (HTTPProbe outside tests). Add it to the manager
// and watch Events.
func New(reader client.Reader, probe Probe) *Poller {
	return &Poller{reader: reader, probe: probe, interval: pollInterval, events: make(chan event.GenericEvent, eventBuffer)}
}

// Events carries one generic event for each cluster whose etcd reported an alarm, for the
// controller's channel source.
func (p *Poller) Events() <-chan event.GenericEvent { return p.events }

// NeedLeaderElection: only the leader's controllers act on the events.
func (p *Poller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (p *Poller) Start(ctx context.Context) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p.poll(ctx)
	}
}

// poll asks one member of every cluster worth asking, pollParallel at a time.
func (p *Poller) poll(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("alarm-poll")
	clusters := &etcdv1beta2.EtcdClusterList{}
	if err := p.reader.List(ctx, clusters); err != nil {
		log.Error(err, "Listing EtcdClusters")
		return
	}
	sem := make(chan struct{}, pollParallel)
	var wg sync.WaitGroup
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if !worthAsking(c) {
			continue
		}
		host, ok := p.startedMember(ctx, c)
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			alarm, err := p.probe(pctx, fmt.Sprintf("http://%s:%d", host, member.MetricsPort))
			if err != nil || alarm == "" {
				return
			}
			log.V(1).Info("etcd reports an alarm: waking the cluster's pass", "EtcdCluster", client.ObjectKeyFromObject(c), "alarm", alarm)
			select {
			case p.events <- event.GenericEvent{Object: c}:
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
}

// worthAsking: an Available cluster the operator acts on, whose status reports no alarm
// yet. Once one is reported, the passes pace themselves (a quota too small for the data is
// not looked at every few seconds for ever); a cluster that is not Available is looked at
// often anyway.
func worthAsking(c *etcdv1beta2.EtcdCluster) bool {
	if c.DeletionTimestamp != nil || c.Spec.Paused || !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) {
		return false
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded); d != nil {
		switch d.Reason {
		case etcdv1beta2.ReasonNoSpace, etcdv1beta2.ReasonQuotaExceeded, etcdv1beta2.ReasonAlarmRaised:
			return false
		}
	}
	return true
}

// startedMember returns the DNS name of one of c's own member pods (controlled by c's UID)
// whose etcd has started. An alarm is cluster-wide (raised through raft), so one member tells.
func (p *Poller) startedMember(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, bool) {
	pods := &corev1.PodList{}
	if err := p.reader.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return "", false
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if metav1.IsControlledBy(pod, c) && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && etcdStarted(pod) {
			return member.Host(c, pod.Name), true
		}
	}
	return "", false
}

// etcdStarted reports whether the kubelet says the pod's etcd container has started (its
// startup probe passed since the container's last start): until then etcd does not listen.
// The same test as the controller's (internal/controller/etcdcluster/observe.go), which this
// package may not import.
func etcdStarted(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == member.ContainerName {
			return s.Started != nil && *s.Started
		}
	}
	return false
}
