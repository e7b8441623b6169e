package etcdcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// observation is one pass's view: the pure cluster.Observed plus the objects behind it.
type observation struct {
	cluster.Observed
	pods      map[string]*corev1.Pod
	clusterID uint64
	etcd      cluster.Client // nil when no member pod runs; closed by the caller
}

// ClientFactory connects to an etcd cluster; tests replace it with a fake.
type ClientFactory func(cfg cluster.Config) (cluster.Client, error)

// observe lists the member pods and volumes and asks etcd for its members and their status.
// It opens the one etcd client of this pass; the caller closes obs.etcd.
func (r *Reconciler) observe(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*observation, error) {
	obs := &observation{pods: map[string]*corev1.Pod{}}
	obs.Pods = map[string]cluster.PodState{}
	obs.PVCs = map[string]bool{}
	obs.Status = map[uint64]cluster.EndpointStatus{}
	obs.Formed = c.Status.ClusterID != ""

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing member pods of %s: %w", klog.KObj(c), err)
	}
	var endpoints []string
	for i := range pods.Items {
		p := &pods.Items[i]
		obs.pods[p.Name] = p
		obs.Pods[p.Name] = cluster.PodState{Name: p.Name, Phase: string(p.Status.Phase), Terminating: p.DeletionTimestamp != nil, Version: member.PodVersion(p)}
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			endpoints = append(endpoints, member.ClientURL(c, p.Name))
		}
	}
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		pvcs := &corev1.PersistentVolumeClaimList{}
		if err := r.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
			return nil, fmt.Errorf("listing member volumes of %s: %w", klog.KObj(c), err)
		}
		for _, pvc := range pvcs.Items {
			if pvc.DeletionTimestamp == nil {
				obs.PVCs[pvc.Labels[member.LabelMember]] = true
			}
		}
	}
	if len(endpoints) == 0 {
		return obs, nil
	}
	tlsCfg, err := r.operatorTLS(ctx, c)
	if err != nil {
		return nil, err
	}
	cli, err := r.NewEtcdClient(cluster.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: r.Options.EtcdDialTimeout, RequestTimeout: r.Options.EtcdRequestTimeout})
	if err != nil {
		return nil, err
	}
	obs.etcd = cli
	members, id, err := cli.MemberList(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("No member answers", "error", err.Error())
		return obs, nil
	}
	obs.Reachable, obs.Members, obs.clusterID = true, members, id
	r.probeMembers(ctx, cli, obs)
	return obs, nil
}

// probeMembers asks every started member whose pod runs for its status, in parallel so that
// down members cost one request timeout, not one each.
func (r *Reconciler) probeMembers(ctx context.Context, cli cluster.Client, obs *observation) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range obs.Members {
		p, ok := obs.pods[m.PodName()]
		if !m.Started() || len(m.ClientURLs) == 0 || !ok || p.Status.Phase != corev1.PodRunning {
			continue
		}
		wg.Add(1)
		go func(m cluster.Member) {
			defer wg.Done()
			s, err := cli.Status(ctx, m.ClientURLs[0])
			if err != nil {
				return
			}
			mu.Lock()
			obs.Status[m.ID] = s
			mu.Unlock()
		}(m)
	}
	wg.Wait()
}

// errSecretNotFound marks a missing TLS secret, reported as a condition.
var errSecretNotFound = errors.New("TLS secret not found")

// operatorTLS loads the operator's client certificate for c, or nil for a plaintext cluster.
func (r *Reconciler) operatorTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster) (*tls.Config, error) {
	if !c.Spec.TLS.IsSecureClient() {
		return nil, nil
	}
	name := c.Spec.TLS.Static.OperatorSecret
	s := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("getting operator TLS secret %s/%s: %w: %w", c.Namespace, name, errSecretNotFound, err)
	}
	cert, err := tls.X509KeyPair(s.Data["etcd-client.crt"], s.Data["etcd-client.key"])
	if err != nil {
		return nil, fmt.Errorf("parsing etcd-client.crt/key of secret %s/%s: %w", c.Namespace, name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["etcd-client-ca.crt"]) {
		return nil, fmt.Errorf("parsing etcd-client-ca.crt of secret %s/%s: no certificate", c.Namespace, name)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
