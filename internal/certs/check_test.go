package certs

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("issuer CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := Leaf{CommonName: "server", DNSNames: []string{"*.c.ns.svc", "c-client.ns.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true}
	cert, key, err := ca.Issue(leaf, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, strayKey, _ := ca.Issue(leaf, now, time.Hour)
	reordered := leaf
	reordered.DNSNames = []string{"c-client.ns.svc", "*.c.ns.svc"}
	renamed := leaf
	renamed.DNSNames = []string{"*.d.ns.svc", "d-client.ns.svc"}
	clientOnly := Leaf{CommonName: "client", Client: true}
	clientCert, clientKey, _ := ca.Issue(clientOnly, now, time.Hour)
	serverUse := clientOnly
	serverUse.Server = true
	for _, tc := range []struct {
		name      string
		cert, key []byte
		caPEM     []byte
		leaf      Leaf
		at        time.Time
		want      string
	}{
		{"issued for the leaf", cert, key, ca.CertPEM, leaf, now, ""},
		{"names in another order", cert, key, ca.CertPEM, reordered, now, ""},
		{"the leaf and its CA in tls.crt", append(append([]byte{}, cert...), ca.CertPEM...), key, ca.CertPEM, leaf, now, ""},
		{"other names", cert, key, ca.CertPEM, renamed, now, "want [*.d.ns.svc d-client.ns.svc]"},
		{"under another CA", cert, key, other.CertPEM, leaf, now, "not valid under its CA"},
		{"expired", cert, key, ca.CertPEM, leaf, now.Add(2 * time.Hour), "not valid under its CA"},
		{"foreign key", cert, strayKey, ca.CertPEM, leaf, now, "certificate and key"},
		{"no CA file", cert, key, nil, leaf, now, "no CA certificate"},
		{"nothing issued yet", nil, nil, nil, leaf, now, "certificate and key"},
		{"a client certificate asked to serve", clientCert, clientKey, ca.CertPEM, serverUse, now, "not valid under its CA"},
	} {
		if got := Check(tc.cert, tc.key, tc.caPEM, tc.leaf, tc.at); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Check = %q, want %q", tc.name, got, tc.want)
		}
	}
}
