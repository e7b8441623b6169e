package kubesecret

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestOperatorTLS: the operator's client certificate of a TLS cluster, with the reason a user
// sees when its Secret is missing or unusable.
func TestOperatorTLS(t *testing.T) {
	certs := snapshottest.NewCerts(t)
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: data}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		secret("good", certs.SecretData()),
		secret("no-ca", map[string][]byte{"etcd-client.crt": certs.ClientCert, "etcd-client.key": certs.ClientKey}),
	).Build()
	cluster := func(operatorSecret string) *etcdv1beta2.EtcdCluster {
		cl := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		if operatorSecret != "" {
			cl.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{OperatorSecret: operatorSecret}}
		}
		return cl
	}
	for _, tc := range []struct {
		secret, reason string
		tls            bool
	}{
		{"", "", false}, // plain http: no TLS, no error
		{"good", "", true},
		{"missing", etcdv1beta2.ReasonSecretNotFound, false},
		{"no-ca", etcdv1beta2.ReasonInvalidCredentials, false},
	} {
		cfg, err := OperatorTLS(t.Context(), c, cluster(tc.secret))
		if reason.Of(err) != tc.reason || (tc.reason == "" && err != nil) || (cfg != nil) != tc.tls {
			t.Errorf("secret %q: config %v, error %v; want reason %q, TLS %v", tc.secret, cfg != nil, err, tc.reason, tc.tls)
		}
	}
}
