package etcdcluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// observation is one pass's view: the pure cluster.Observed plus the objects behind it.
type observation struct {
	cluster.Observed
	// pods and pvcs are the cluster's own member pods and volumes (controlled by its UID).
	pods map[string]*corev1.Pod
	pvcs map[string]*corev1.PersistentVolumeClaim
	etcd cluster.Client // nil when no member pod runs; closed by the caller
	// probeErrs holds, per member ID, why its status call failed (for status.members.details).
	probeErrs map[uint64]string
	// replaced are the kept volumes of replaced members (controlled by c, never reused).
	replaced []*corev1.PersistentVolumeClaim
	// quotaExceeded: the previous pass found the quota too small for the data (Degraded
	// QuotaExceeded), read before this pass rewrites the conditions.
	quotaExceeded bool
}

// ClientFactory connects to an etcd cluster; tests replace it with a fake.
type ClientFactory func(cfg cluster.Config) (cluster.Client, error)

// podStuckGrace is how long past its deletion timestamp and grace period a member pod may
// stay terminating before the operator treats it as stuck (its node is gone or NotReady and
// nothing will finish the deletion): an emptyDir member is then removed and replaced.
const podStuckGrace = 2 * time.Minute

// observe lists the member pods and volumes and asks etcd for its members and their status.
// Only pods and volumes controlled by c count; the names of the others are reserved. It
// opens the one etcd client of this pass, dialing only the URLs computed for c's own running
// pods whose etcd has started; the caller closes obs.etcd.
func (r *Reconciler) observe(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*observation, error) {
	obs := &observation{pods: map[string]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}, probeErrs: map[uint64]string{}}
	obs.Pods = map[string]cluster.PodState{}
	obs.PVCs = map[string]bool{}
	obs.RecreateVersions = map[string]string{}
	obs.ReservedNames = map[string]bool{}
	if d := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded); d != nil {
		obs.quotaExceeded = d.Status == metav1.ConditionTrue && d.Reason == etcdv1beta2.ReasonQuotaExceeded
	}
	obs.Status = map[uint64]cluster.EndpointStatus{}
	obs.Formed = c.Status.ClusterID != ""
	obs.RecordedClusterID, _ = strconv.ParseUint(c.Status.ClusterID, 16, 64)

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing member pods of %s: %w", klog.KObj(c), err)
	}
	now := r.Clock.Now()
	nodes := map[string]time.Duration{}
	var endpoints []string
	addrs := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !controlledBy(p, c) {
			obs.ReservedNames[p.Name] = true
			continue
		}
		obs.pods[p.Name] = p
		s := podState(p, now)
		s.NodeLostFor = r.nodeLostFor(ctx, p, now, nodes)
		obs.Pods[p.Name] = s
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && etcdStarted(p) {
			endpoints = append(endpoints, member.ClientURL(c, p.Name))
			if p.Status.PodIP != "" {
				addrs[member.Host(c, p.Name)] = p.Status.PodIP
			}
		}
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing member volumes of %s: %w", klog.KObj(c), err)
	}
	usesPVC := c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		switch {
		case !controlledBy(pvc, c) || pvc.DeletionTimestamp != nil:
			obs.ReservedNames[pvc.Name] = true
		case pvc.Annotations[etcdv1beta2.AnnotationReplacedAt] != "":
			// A replaced member's volume: kept, never a member's again (replaced.go).
			obs.ReservedNames[pvc.Name] = true
			obs.replaced = append(obs.replaced, pvc)
		case usesPVC:
			obs.pvcs[pvc.Name] = pvc
			obs.PVCs[pvc.Name] = true
			if v := pvc.Annotations[etcdv1beta2.AnnotationRecreateVersion]; v != "" {
				obs.RecreateVersions[pvc.Name] = v
			}
		}
	}
	if len(endpoints) == 0 {
		return obs, nil
	}
	access, err := kubesecret.OperatorAccess(ctx, r.Client, c)
	if err != nil {
		return nil, err
	}
	// With credentials, clientv3 authenticates while connecting: a cluster that does not
	// answer fails here, and is observed as one that does not answer, like a failed list.
	cli, err := r.NewEtcdClient(cluster.Config{Endpoints: endpoints, Access: access, DialTimeout: r.Options.EtcdDialTimeout, RequestTimeout: r.Options.EtcdRequestTimeout,
		Addrs: addrs})
	if err == nil {
		obs.etcd = cli
		var ml cluster.Membership
		if ml, err = cli.MemberList(ctx); err == nil {
			obs.Reachable, obs.Members, obs.ClusterID, obs.Linearizable = true, ml.Members, ml.ClusterID, ml.Linearizable
		}
	}
	switch {
	case etcdaccess.IsAuthError(err):
		// Refused credentials are not dead members: stop before anything is planned from them.
		if cli != nil {
			_ = cli.Close()
		}
		whose := "spec.auth names none: set it to a Secret with the root user's password"
		if c.Spec.Auth != nil {
			whose = "those of secret " + c.Spec.Auth.SecretName
		}
		return nil, reason.New(etcdv1beta2.ReasonAuthFailed, fmt.Errorf("etcd runs with authentication and refuses the operator's credentials (%s): %w", whose, err))
	case err != nil:
		ctrl.LoggerFrom(ctx).V(1).Info("No member answers", "error", err.Error())
		return obs, nil
	}
	r.probeMembers(ctx, c, cli, obs)
	return obs, nil
}

// etcdStarted reports whether the kubelet says the pod's etcd container has started: its
// startup probe (etcd's liveness endpoint) passed since the container's last start. Until then
// etcd does not listen, and a pass would spend the whole dial timeout (or a status request's
// timeout) on it, holding a worker for seconds while nothing can be learnt: such a pod counts
// as one that does not answer, as a failed dial would, and its update once started brings
// the next pass.
func etcdStarted(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == member.ContainerName {
			return s.Started != nil && *s.Started
		}
	}
	return false
}

// podState reduces a member pod to what the planner needs. A pod is stuck once now is past its
// deletion timestamp plus its grace period plus podStuckGrace (the deletion timestamp already
// includes the grace period: counting it twice only waits longer); a pod the taint manager
// evicted from a node that is not ready or unreachable, once past its deletion timestamp: the
// kubelet that would finish the deletion is the one Kubernetes lost.
func podState(p *corev1.Pod, now time.Time) cluster.PodState {
	s := cluster.PodState{Name: p.Name, Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil, Version: member.PodVersion(p),
		InitialCluster: member.PodInitialCluster(p), SpecHash: member.PodSpecHash(p), UnreadyFor: unreadyFor(p, now),
		ForcedNewCluster: member.PodForcedNewCluster(p), Restarts: etcdRestarts(p), Flags: member.PodFlags(p), Coreos: isCoreosPod(p)}
	if p.DeletionTimestamp != nil {
		if evictedFromLostNode(p) {
			s.Stuck = now.After(p.DeletionTimestamp.Time)
			return s
		}
		grace := time.Duration(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
		}
		s.Stuck = now.After(p.DeletionTimestamp.Add(grace + podStuckGrace))
	}
	return s
}

// reasonTaintEviction is the reason of the DisruptionTarget condition the taint manager sets on
// a pod it deletes (a NoExecute taint it does not tolerate, such as a lost node's).
const reasonTaintEviction = "DeletionByTaintManager"

// evictedFromLostNode reports whether the taint manager deleted p: its node has a NoExecute
// taint p no longer tolerates, node.kubernetes.io/not-ready or unreachable for a member.
func evictedFromLostNode(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == reasonTaintEviction {
			return true
		}
	}
	return false
}

// probeMembers asks every started member whose pod (the cluster's own) runs for its status,
// at the URL computed for that pod, in parallel so that down members cost one request
// timeout, not one each. An answer from another member than the one expected at that URL
// counts as no answer.
func (r *Reconciler) probeMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, cli cluster.Client, obs *observation) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range obs.Members {
		p, ok := obs.pods[m.Name]
		switch {
		case !m.Started():
			obs.probeErrs[m.ID] = "added to the member list, not started yet"
			continue
		case !ok:
			obs.probeErrs[m.ID] = "no pod of this cluster runs it"
			continue
		case p.Status.Phase != corev1.PodRunning:
			obs.probeErrs[m.ID] = fmt.Sprintf("its pod is %s", p.Status.Phase)
			continue
		case !etcdStarted(p):
			obs.probeErrs[m.ID] = "its etcd container has not started (startup probe)"
			continue
		}
		wg.Add(1)
		go func(m cluster.Member) {
			defer wg.Done()
			s, err := cli.Status(ctx, member.ClientURL(c, m.Name))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				obs.probeErrs[m.ID] = err.Error()
			case s.MemberID != m.ID:
				ctrl.LoggerFrom(ctx).V(1).Info("Another member answers at a member's URL", "member", m.Name, "want", fmt.Sprintf("%x", m.ID), "got", fmt.Sprintf("%x", s.MemberID))
				obs.probeErrs[m.ID] = fmt.Sprintf("member %x answers at its URL", s.MemberID)
			default:
				obs.Status[m.ID] = s
			}
		}(m)
	}
	wg.Wait()
}

// etcdRestarts is the restart count of p's etcd container.
func etcdRestarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == member.ContainerName {
			return cs.RestartCount
		}
	}
	return 0
}

// unreadyFor is how long p has been running with its Ready condition False: since the
// condition's last transition (a crash-looping container never turns it True; the node
// controller turns it False when the pod's node stops reporting). 0 for a pod that is ready,
// not running, or not yet reported on. A terminating pod counts too: the planner judges one only
// once it is stuck (its node lost), and its deletion leaves the pod's phase as it was.
func unreadyFor(p *corev1.Pod, now time.Time) time.Duration {
	if p.Status.Phase != corev1.PodRunning {
		return 0
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionFalse && !cond.LastTransitionTime.IsZero() {
			return max(now.Sub(cond.LastTransitionTime.Time), 0)
		}
	}
	return 0
}
