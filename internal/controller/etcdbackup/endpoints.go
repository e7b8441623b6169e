package etcdbackup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// target is the cluster a backup reads from.
type target struct {
	// name is the EtcdCluster's name, empty for etcdEndpoints.
	name      string
	endpoints []string
	access    etcdaccess.Access
}

// resolveTarget returns the endpoints, client TLS and credentials of the backup's cluster: etcdEndpoints
// (only in the backup's namespace or allowed, see namespacedEndpoints), or the named
// EtcdCluster's ready members (per-pod DNS names), falling back to its client Service.
func resolveTarget(ctx context.Context, c client.Reader, ns string, spec *etcdv1beta2.BackupSpec, allowed []string) (*target, error) {
	t := &target{}
	if spec.EtcdCluster == nil {
		eps, err := namespacedEndpoints(ns, spec.EtcdEndpoints, allowed)
		if err != nil {
			return nil, err
		}
		t.endpoints = eps
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
		t.name = cl.Name
		t.endpoints = clusterEndpoints(cl)
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
		if t.access.TLS, err = kubesecret.ClientTLS(ctx, c, ns, tlsSecret); err != nil {
			return nil, err
		}
	}
	if authSecret != "" {
		if err := kubesecret.Credentials(ctx, c, ns, authSecret, &t.access); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// clusterEndpoints returns the client URLs of an EtcdCluster's ready members, or of its client
// Service when the status lists none.
func clusterEndpoints(cl *etcdv1beta2.EtcdCluster) []string {
	scheme := "http"
	if cl.Spec.TLS.IsSecureClient() {
		scheme = "https"
	}
	var eps []string
	for _, m := range cl.Status.Members.Ready {
		eps = append(eps, fmt.Sprintf("%s://%s.%s.%s.svc:%d", scheme, m, cl.Name, cl.Namespace, etcdv1beta2.EtcdClientPort))
	}
	if len(eps) == 0 {
		eps = []string{fmt.Sprintf("%s://%s.%s.svc:%d", scheme, cl.ClientServiceName(), cl.Namespace, etcdv1beta2.EtcdClientPort)}
	}
	return eps
}
