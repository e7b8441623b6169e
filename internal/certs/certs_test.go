package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestIssueAndServe: a server and a client certificate issued by one CA complete a mutual TLS
// handshake over loopback, with the server name checked, as etcd and the operators do.
func TestIssueAndServe(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.Issue(Leaf{CommonName: "server", DNSNames: []string{"m-0.c.ns.svc", "localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := ca.Issue(Leaf{CommonName: "client", Client: true}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	srvPair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	cliPair, err := tls.X509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = c.Write([]byte("ok"))
			_ = c.Close()
		}
	}()
	d := &tls.Dialer{Config: &tls.Config{Certificates: []tls.Certificate{cliPair}, RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got, _ := io.ReadAll(conn); string(got) != "ok" {
		t.Fatalf("read %q", got)
	}
}

// TestStale: a fresh certificate is current; one inside its renewal window, for other names,
// from another CA, with a foreign key or missing is stale, with the reason.
func TestStale(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := Leaf{CommonName: "peer", DNSNames: []string{"*.c.ns.svc"}, Server: true, Client: true}
	cert, key, err := ca.Issue(leaf, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, _ := other.Issue(leaf, now, time.Hour)
	_, strayKey, _ := ca.Issue(leaf, now, time.Hour)
	renamed := leaf
	renamed.DNSNames = []string{"*.d.ns.svc"}
	clientOnly := leaf
	clientOnly.Server = false
	clientCert, clientKey, _ := ca.Issue(clientOnly, now, time.Hour)
	for _, tc := range []struct {
		name      string
		cert, key []byte
		leaf      Leaf
		at        time.Time
		want      string
	}{
		{"fresh", cert, key, leaf, now, ""},
		{"just before the window", cert, key, leaf, now.Add(40*time.Minute - time.Second), ""},
		{"in the renewal window", cert, key, leaf, now.Add(40 * time.Minute), "renewed 20m0s before"},
		{"other names", cert, key, renamed, now, "want [*.d.ns.svc]"},
		{"another CA", otherCert, otherKey, leaf, now, "not valid under the cluster's CA"},
		{"foreign key", cert, strayKey, leaf, now, "does not match"},
		{"missing", nil, nil, leaf, now, "missing"},
		{"client use only", clientCert, clientKey, leaf, now, "not valid under the cluster's CA"},
	} {
		if got := ca.Stale(tc.cert, tc.key, tc.leaf, tc.at, 20*time.Minute); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Stale = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A leaf never outlives its CA.
	late, _, err := ca.Issue(leaf, now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := NotAfter(late); got.After(ca.Cert.NotAfter) {
		t.Fatalf("leaf expires %s after its CA %s", got, ca.Cert.NotAfter)
	}
	if _, err := ParseCA(ca.CertPEM, otherKey); err == nil {
		t.Fatal("a CA with a key of another certificate parsed")
	}
}
