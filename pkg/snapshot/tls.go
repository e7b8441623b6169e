package snapshot

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Keys of a client TLS Secret, the coreos/etcd-operator names.
const (
	TLSCertKey = "etcd-client.crt"
	TLSKeyKey  = "etcd-client.key"
	TLSCAKey   = "etcd-client-ca.crt"
)

// TLSConfigFromSecret builds a client TLS configuration from the data of a Secret with
// etcd-client.crt, etcd-client.key and etcd-client-ca.crt (PEM).
func TLSConfigFromSecret(data map[string][]byte) (*tls.Config, error) {
	cert, key, ca := data[TLSCertKey], data[TLSKeyKey], data[TLSCAKey]
	if len(cert) == 0 || len(key) == 0 || len(ca) == 0 {
		return nil, fmt.Errorf("client TLS secret needs %s, %s and %s", TLSCertKey, TLSKeyKey, TLSCAKey)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("parsing %s and %s: %w", TLSCertKey, TLSKeyKey, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("parsing " + TLSCAKey + ": no PEM certificate found")
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
