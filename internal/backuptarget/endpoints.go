// Package backuptarget resolves what a backup spec reaches: the etcd members (fenced to the
// spec's namespace), their client TLS and credentials, the cluster identity, and the store.
// The EtcdBackup controller and the EtcdBackupSchedule controller's continuous capture share it.
package backuptarget

import (
	"context"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// Target is the cluster a backup (or a continuous capture) reads from.
type Target struct {
	// Name is the EtcdCluster's name, empty for etcdEndpoints.
	Name      string
	Endpoints []string
	// Addrs maps endpoint hosts to the verified pod IPs to dial (snapshot.Config.Addrs).
	Addrs  map[string]string
	Access etcdaccess.Access
}

// ClientConfig is the etcd client configuration that reaches t: its endpoints, dialed at the
// verified addresses, with its TLS and credentials.
func (t *Target) ClientConfig(dialTimeout time.Duration) clientv3.Config {
	cfg := t.Access.ClientConfig(t.Endpoints, dialTimeout)
	if len(t.Addrs) > 0 {
		cfg.DialOptions = append(cfg.DialOptions, etcdaccess.DialAt(t.Addrs))
	}
	return cfg
}

// Resolve returns the endpoints, client TLS and credentials of the backup's cluster: etcdEndpoints
// (only in the backup's namespace or allowed, see namespacedEndpoints, and leading only to its
// pods, see fenceEndpoints), or the named EtcdCluster's member pods (see memberTargets). c is
// the cache; live reads pods, Services and EndpointSlices around it (the backup operator keeps
// no cache of them).
func Resolve(ctx context.Context, c, live client.Reader, ns string, spec *etcdv1beta2.BackupSpec, allowed []string) (*Target, error) {
	t := &Target{}
	if spec.EtcdCluster == nil {
		eps, err := namespacedEndpoints(ns, spec.EtcdEndpoints, allowed)
		if err != nil {
			return nil, err
		}
		if t.Addrs, err = fenceEndpoints(ctx, live, ns, eps); err != nil {
			return nil, err
		}
		t.Endpoints = eps
	}
	tlsSecret, authSecret := spec.ClientTLSSecret, ""
	if spec.Auth != nil {
		authSecret = spec.Auth.SecretName
	}
	if spec.EtcdCluster != nil {
		cl := &etcdv1beta2.EtcdCluster{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: spec.EtcdCluster.Name}, cl); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, reason.Errorf(etcdv1beta2.ReasonClusterNotFound, "EtcdCluster %s/%s not found", ns, spec.EtcdCluster.Name)
			}
			return nil, fmt.Errorf("getting EtcdCluster %s/%s: %w", ns, spec.EtcdCluster.Name, err)
		}
		t.Name = cl.Name
		var err error
		if t.Endpoints, t.Addrs, err = memberTargets(ctx, live, cl); err != nil {
			return nil, err
		}
		if cl.Spec.TLS.IsSecureClient() {
			tlsSecret = cl.TLSSecrets().OperatorSecret
		}
		authSecret = ""
		if cl.Spec.Auth != nil {
			authSecret = cl.Spec.Auth.SecretName
		}
	}
	if tlsSecret != "" {
		var err error
		if t.Access.TLS, err = kubesecret.ClientTLS(ctx, c, ns, tlsSecret); err != nil {
			return nil, err
		}
	}
	if authSecret != "" {
		if err := kubesecret.Credentials(ctx, c, ns, authSecret, &t.Access); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// memberTargets returns the client URLs (per-pod DNS names) of an EtcdCluster's member pods
// and the pod IPs to dial for them: the running pods the cluster controls (owner UID, not a
// label or a name), those that status.members.ready lists when it lists any. Nothing is taken
// from status strings alone, so whoever may write the status cannot point a backup elsewhere,
// and no DNS record (a hand-written EndpointSlice of the peer Service) decides where it connects.
func memberTargets(ctx context.Context, live client.Reader, cl *etcdv1beta2.EtcdCluster) ([]string, map[string]string, error) {
	pods := &corev1.PodList{}
	if err := live.List(ctx, pods, client.InNamespace(cl.Namespace), client.MatchingLabels(member.SelectorLabels(cl))); err != nil {
		return nil, nil, fmt.Errorf("listing the member pods of EtcdCluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	ready := sets.New(cl.Status.Members.Ready...)
	var eps []string
	addrs := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1.IsControlledBy(p, cl) || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			continue
		}
		if ready.Len() > 0 && !ready.Has(p.Name) {
			continue
		}
		eps = append(eps, member.ClientURL(cl, p.Name))
		addrs[member.Host(cl, p.Name)] = p.Status.PodIP
	}
	if len(eps) == 0 {
		return nil, nil, reason.Transient(etcdv1beta2.ReasonEtcdUnreachable,
			fmt.Errorf("EtcdCluster %s/%s has no running member pod", cl.Namespace, cl.Name))
	}
	sort.Strings(eps)
	return eps, addrs, nil
}
