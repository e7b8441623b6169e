package backend

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// RootCAs returns the certificate authorities an HTTPS client of a provider trusts: the system's
// roots (where the system has none, as in the operator image, the public roots the binaries embed
// with golang.org/x/crypto/x509roots/fallback) plus every PEM certificate in caBundle, for
// object stores behind a private CA (on-prem MinIO, Ceph RGW, a TLS-inspecting proxy). A
// non-empty caBundle without a single certificate is an error, never silently ignored.
func RootCAs(caBundle []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(caBundle) > 0 && !pool.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("CA bundle holds no PEM certificate")
	}
	return pool, nil
}

// HTTPTransport returns a clone of http.DefaultTransport that verifies servers against
// RootCAs(caBundle), with TLS 1.2 at least.
func HTTPTransport(caBundle []byte) (*http.Transport, error) {
	pool, err := RootCAs(caBundle)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}
