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

// TestOperatorAccess: the operator's client certificate of a TLS cluster and the credentials of
// a cluster with spec.auth, with the reason a user sees when a Secret is missing or unusable.
func TestOperatorAccess(t *testing.T) {
	certs := snapshottest.NewCerts(t)
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: data}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		secret("good", certs.SecretData()),
		secret("no-ca", map[string][]byte{"etcd-client.crt": certs.ClientCert, "etcd-client.key": certs.ClientKey}),
		secret("root", map[string][]byte{"password": []byte("pw")}),
		secret("admin", map[string][]byte{"username": []byte("admin"), "password": []byte("pw2")}),
		secret("no-password", map[string][]byte{"username": []byte("root")}),
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
		access, err := OperatorAccess(t.Context(), c, cluster(tc.secret))
		if reason.Of(err) != tc.reason || (tc.reason == "" && err != nil) || (access.TLS != nil) != tc.tls {
			t.Errorf("secret %q: TLS %v, error %v; want reason %q, TLS %v", tc.secret, access.TLS != nil, err, tc.reason, tc.tls)
		}
	}
	for _, tc := range []struct {
		secret, reason, user, password string
	}{
		{"root", "", "root", "pw"}, // no username: root
		{"admin", "", "admin", "pw2"},
		{"missing", etcdv1beta2.ReasonSecretNotFound, "", ""},
		{"no-password", etcdv1beta2.ReasonInvalidCredentials, "", ""},
	} {
		cl := cluster("")
		cl.Spec.Auth = &etcdv1beta2.AuthPolicy{SecretName: tc.secret}
		access, err := OperatorAccess(t.Context(), c, cl)
		if reason.Of(err) != tc.reason || (tc.reason == "" && err != nil) || access.Username != tc.user || access.Password != tc.password {
			t.Errorf("auth secret %q: user %q password %q, error %v; want reason %q, %s/%s", tc.secret, access.Username, access.Password, err, tc.reason, tc.user, tc.password)
		}
	}
}
