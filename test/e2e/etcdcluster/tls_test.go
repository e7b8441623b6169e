//go:build e2e

package etcdcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// testCA signs the certificates of one TLS test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t testing.TB) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for dnsNames, usable as server and client.
func (ca *testCA) issue(t testing.TB, cn string, dnsNames ...string) (certPEM, keyPEM []byte) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, DNSNames: dnsNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestTLSCluster: a cluster with static peer, server and operator certificates becomes
// Available (the operator talks TLS with its client certificate); a client with a certificate
// reads and writes; plaintext and certificate-less TLS clients are refused.
func TestTLSCluster(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-tls")
	ca := newCA(t)
	names := []string{"*.c." + ns + ".svc", "*.c." + ns + ".svc.cluster.local", "c-client." + ns + ".svc", "c-client." + ns + ".svc.cluster.local", "localhost"}
	peerCrt, peerKey := ca.issue(t, "peer", names...)
	srvCrt, srvKey := ca.issue(t, "server", names...)
	cliCrt, cliKey := ca.issue(t, "client")
	for name, data := range map[string]map[string][]byte{
		"peer":     {"peer.crt": peerCrt, "peer.key": peerKey, "peer-ca.crt": ca.pem},
		"server":   {"server.crt": srvCrt, "server.key": srvKey, "server-ca.crt": ca.pem},
		"operator": {"etcd-client.crt": cliCrt, "etcd-client.key": cliKey, "etcd-client-ca.crt": ca.pem},
	} {
		f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data})
	}
	c := newCluster(ns, "c", 3)
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: "peer", ServerSecret: "server"},
		OperatorSecret: "operator",
	}}
	f.Create(t, c)
	took := waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	t.Logf("MEASURE TLS create -> Available (size 3): %s", took.Round(100*time.Millisecond))

	pair, err := tls.X509KeyPair(cliCrt, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	ep := "https://" + framework.ServiceDNSName("c-client", ns) + ":2379"
	cli := etcdClient(t, f, &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}, ep)
	put(t, cli, "secure", "yes")
	checkMembers(t, f, &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}, "https", ns, "c", 3, "secure", "yes")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	plain := etcdClient(t, f, nil, "http://"+framework.ServiceDNSName("c-client", ns)+":2379")
	if _, err := plain.Get(ctx, "secure"); err == nil {
		t.Fatal("plaintext client was served by a TLS cluster")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	nocert := etcdClient(t, f, &tls.Config{RootCAs: pool}, ep)
	if _, err := nocert.Get(ctx2, "secure"); err == nil {
		t.Fatal("TLS client without a certificate was served")
	}
}
