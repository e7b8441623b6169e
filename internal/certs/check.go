package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"time"
)

// Check says why a certificate issued elsewhere (cert-manager) cannot serve as l at now, or ""
// when it can: certPEM (the leaf, then any intermediates) and keyPEM are a pair, the leaf is
// valid at now under the CA certificates in caPEM for l's usages, and it names exactly l's DNS
// names and IP addresses, in any order.
func Check(certPEM, keyPEM, caPEM []byte, l Leaf, now time.Time) string {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return "certificate and key: " + err.Error()
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return "no CA certificate"
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return "an intermediate certificate: " + err.Error()
		}
		intermediates.AddCert(c)
	}
	cert := pair.Leaf
	if err := verify(cert, x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: now}, l); err != nil {
		return "not valid under its CA: " + err.Error()
	}
	sortedIPs := func(ips []net.IP) []string {
		out := make([]string, 0, len(ips))
		for _, ip := range ips {
			out = append(out, ip.String())
		}
		slices.Sort(out)
		return out
	}
	gotNames, wantNames := slices.Sorted(slices.Values(cert.DNSNames)), slices.Sorted(slices.Values(l.DNSNames))
	if !slices.Equal(gotNames, wantNames) || !slices.Equal(sortedIPs(cert.IPAddresses), sortedIPs(l.IPs)) {
		return fmt.Sprintf("names %v %v, want %v %v", cert.DNSNames, cert.IPAddresses, l.DNSNames, l.IPs)
	}
	return ""
}

// verify verifies cert with opts for each of l's usages in turn: x509 accepts a chain that
// allows any one of the usages it is given, and a peer certificate must allow both.
func verify(cert *x509.Certificate, opts x509.VerifyOptions, l Leaf) error {
	for _, u := range l.usages() {
		opts.KeyUsages = []x509.ExtKeyUsage{u}
		if _, err := cert.Verify(opts); err != nil {
			return err
		}
	}
	return nil
}
