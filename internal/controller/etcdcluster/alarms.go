package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

const (
	// alarmPollInterval is how often the operator asks one member of each Available cluster
	// whether etcd raised an alarm. A NOSPACE alarm changes no Kubernetes object (the
	// readiness probe leaves it out on purpose, so that reads go on) and the steady pass comes
	// every requeueSteady: without the poll, a quota filled between two passes would refuse
	// writes for up to a minute (52 s in the chaos kind nospace-under-load, seed 867144199).
	alarmPollInterval = 5 * time.Second
	// alarmProbeTimeout bounds one member's answer; a member that does not answer in time is
	// the passes' business, not the poll's.
	alarmProbeTimeout = 2 * time.Second
	// alarmPollParallel members are asked at once, so that 50 clusters take one round trip
	// each in a handful of batches.
	alarmPollParallel = 8
)

// AlarmProbe asks the member whose metrics listener is at baseURL (http://host:2381) for
// etcd's /health and returns the alarm it reports ("ALARM NOSPACE"), or "" when it reports
// none. Tests replace it.
type AlarmProbe func(ctx context.Context, baseURL string) (string, error)

// alarmPoller is a leader-only runnable: every interval it asks one started member of each
// Available cluster that reports no alarm yet for its /health, and wakes the cluster's
// reconcile (a generic event on the controller's channel source) when etcd names an alarm.
// It reads the manager's cache and changes nothing itself: the pass that follows reports the
// alarm and recovers from it as it would at its steady period.
type alarmPoller struct {
	reader   client.Reader
	probe    AlarmProbe
	interval time.Duration
	events   chan event.GenericEvent
}

// NeedLeaderElection: only the leader's controllers act on the events.
func (p *alarmPoller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (p *alarmPoller) Start(ctx context.Context) error {
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

// poll asks one member of every cluster worth asking, alarmPollParallel at a time.
func (p *alarmPoller) poll(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("alarm-poll")
	clusters := &etcdv1beta2.EtcdClusterList{}
	if err := p.reader.List(ctx, clusters); err != nil {
		log.Error(err, "Listing EtcdClusters")
		return
	}
	sem := make(chan struct{}, alarmPollParallel)
	var wg sync.WaitGroup
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if !alarmWorthAsking(c) {
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
			pctx, cancel := context.WithTimeout(ctx, alarmProbeTimeout)
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

// alarmWorthAsking: an Available cluster the operator acts on, whose status reports no alarm
// yet. Once one is reported, the passes pace themselves (a quota too small for the data is
// not looked at every few seconds for ever); a cluster that is not Available is looked at
// often anyway.
func alarmWorthAsking(c *etcdv1beta2.EtcdCluster) bool {
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

// startedMember returns the DNS name of one of c's own member pods whose etcd has started.
// An alarm is cluster-wide (raised through raft), so one member tells.
func (p *alarmPoller) startedMember(ctx context.Context, c *etcdv1beta2.EtcdCluster) (string, bool) {
	pods := &corev1.PodList{}
	if err := p.reader.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return "", false
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if controlledBy(pod, c) && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && etcdStarted(pod) {
			return member.Host(c, pod.Name), true
		}
	}
	return "", false
}

// httpAlarmProbe reads GET <baseURL>/health?serializable=true: etcd's alarms, then a local
// read (no leader needed, no credentials: the metrics listener is plain HTTP). An alarm makes
// it answer {"health":"false","reason":"ALARM NOSPACE"} (etcd 3.5 and 3.6).
func httpAlarmProbe(ctx context.Context, baseURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/health?serializable=true", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&h); err != nil {
		return "", fmt.Errorf("reading %s/health: %w", baseURL, err)
	}
	if h.Health == "false" && strings.HasPrefix(h.Reason, "ALARM") {
		return h.Reason, nil
	}
	return "", nil
}
