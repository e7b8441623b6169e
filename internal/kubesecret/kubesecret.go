// Package kubesecret reads the Secrets users name in the API: credentials of object stores, CA
// bundles and etcd client certificates. A Secret that is missing or unusable is an error with
// the condition reason the user sees (SecretNotFound, InvalidCredentials).
package kubesecret

import (
	"context"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Data returns the data of Secret ns/name. A missing Secret is a SecretNotFound failure that a
// retry does not fix; other API errors are returned as they are.
func Data(ctx context.Context, c client.Reader, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s/%s not found", ns, name)
		}
		return nil, fmt.Errorf("getting secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// ClientTLS builds an etcd client TLS configuration from Secret ns/name in the coreos format
// (etcd-client.crt, etcd-client.key, etcd-client-ca.crt).
func ClientTLS(ctx context.Context, c client.Reader, ns, name string) (*tls.Config, error) {
	data, err := Data(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	cfg, err := snapshot.TLSConfigFromSecret(data)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonInvalidCredentials, "client TLS secret %s/%s: %w", ns, name, err)
	}
	return cfg, nil
}

// Credentials reads the etcd user and password of Secret ns/name (username, default root, and
// password: the kubernetes.io/basic-auth keys) into access.
func Credentials(ctx context.Context, c client.Reader, ns, name string, access *etcdaccess.Access) error {
	data, err := Data(ctx, c, ns, name)
	if err != nil {
		return err
	}
	user, password := string(data[etcdv1beta2.AuthUsernameKey]), string(data[etcdv1beta2.AuthPasswordKey])
	if password == "" {
		return reason.Errorf(etcdv1beta2.ReasonInvalidCredentials, "etcd credentials secret %s/%s has no %s", ns, name, etcdv1beta2.AuthPasswordKey)
	}
	if user == "" {
		user = etcdv1beta2.DefaultAuthUsername
	}
	access.Username, access.Password = user, password
	return nil
}

// OperatorAccess is how the operators reach cluster c: the client certificate of its operator
// Secret (none for a cluster without client TLS) and the credentials of its auth Secret (none
// for a cluster without spec.auth).
func OperatorAccess(ctx context.Context, c client.Reader, cluster *etcdv1beta2.EtcdCluster) (etcdaccess.Access, error) {
	var access etcdaccess.Access
	if cluster.Spec.TLS.IsSecureClient() {
		cfg, err := ClientTLS(ctx, c, cluster.Namespace, cluster.TLSSecrets().OperatorSecret)
		if err != nil {
			return access, err
		}
		access.TLS = cfg
	}
	if cluster.Spec.Auth != nil {
		if err := Credentials(ctx, c, cluster.Namespace, cluster.Spec.Auth.SecretName, &access); err != nil {
			return access, err
		}
	}
	return access, nil
}
