package etcdcluster

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
)

// TestRotationProbes: the checks a CA rotation waits on, against a TLS server that requires
// client certificates of CA a, as an etcd member that loaded only a does: it accepts a's client
// certificate and refuses b's (acceptsClientCert, the gate before certificates of a new CA are
// written), and the certificate it serves is read whatever it thinks of the client's
// (servedCert, the check before an old CA leaves the CA files).
func TestRotationProbes(t *testing.T) {
	now := time.Now()
	a, err := certs.NewCA("a", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := certs.NewCA("b", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(ca *certs.CA, server bool) tls.Certificate {
		l := certs.Leaf{CommonName: "x", Client: true}
		if server {
			l = certs.Leaf{CommonName: "server", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1).To4()}, Server: true, Client: true}
		}
		crt, key, err := ca.Issue(l, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	serverCert := leaf(a, true)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"etcdserver":"3.6"}`)) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clusterpki.ParseTrust(a.CertPEM).Pool()}
	srv.StartTLS()
	defer srv.Close()
	ctx := context.Background()
	both := clusterpki.ParseTrust(a.CertPEM, b.CertPEM)

	if err := acceptsClientCert(ctx, srv.URL, both, leaf(a, false)); err != nil {
		t.Errorf("a member trusting a refused a certificate of a: %v", err)
	}
	if err := acceptsClientCert(ctx, srv.URL, both, leaf(b, false)); err == nil {
		t.Error("a member trusting only a accepted a certificate of b: the gate would let b's certificates out too early")
	}
	if err := acceptsClientCert(ctx, srv.URL, clusterpki.ParseTrust(b.CertPEM), leaf(a, false)); err == nil {
		t.Error("a server whose certificate the given CAs do not sign was accepted")
	}
	served, err := servedCert(ctx, srv.URL, leaf(b, false))
	if err != nil {
		t.Fatal(err)
	}
	if string(served) != string(serverCert.Certificate[0]) {
		t.Errorf("served %s, want the server's certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: served}))
	}
	if _, err := servedCert(ctx, "https://127.0.0.1:1", leaf(a, false)); err == nil {
		t.Error("a closed port served a certificate")
	}
}
