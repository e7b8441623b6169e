package snapshottest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Certs is a throwaway CA with a server certificate for 127.0.0.1 and a client certificate, as
// PEM, also written to files in Dir.
type Certs struct {
	Dir                       string
	CA, ServerCert, ServerKey []byte
	ClientCert, ClientKey     []byte
	caKey                     *ecdsa.PrivateKey
	caTmpl                    *x509.Certificate
	ips                       []net.IP
}

// NewCerts makes a CA, a server certificate for 127.0.0.1 and a client certificate.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	return NewCertsFor(t, "127.0.0.1")
}

// NewCertsFor is NewCerts with certificates for the given IP addresses (e.g. the local
// cluster's bridge address, for a server that pods reach).
func NewCertsFor(t testing.TB, ips ...string) *Certs {
	t.Helper()
	c := &Certs{Dir: t.TempDir()}
	for _, ip := range ips {
		c.ips = append(c.ips, net.ParseIP(ip))
	}
	var err error
	if c.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	c.caTmpl = &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, c.caTmpl, c.caTmpl, &c.caKey.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	c.ServerCert, c.ServerKey = c.issue(t, 2, "server", x509.ExtKeyUsageServerAuth)
	c.ClientCert, c.ClientKey = c.issue(t, 3, "client", x509.ExtKeyUsageClientAuth)
	for name, data := range map[string][]byte{"ca.crt": c.CA, "server.crt": c.ServerCert, "server.key": c.ServerKey} {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *Certs) issue(t testing.TB, serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: c.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.caTmpl, &key.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// SecretData is the client TLS Secret's data (etcd-client.crt, .key, -ca.crt).
func (c *Certs) SecretData() map[string][]byte {
	return map[string][]byte{etcdv1beta2.ClientTLSCertKey: c.ClientCert, etcdv1beta2.ClientTLSKeyKey: c.ClientKey, etcdv1beta2.ClientTLSCAKey: c.CA}
}

// ServerArgs are etcd's flags to serve clients over TLS with client certificate auth.
func (c *Certs) ServerArgs() []string {
	return []string{
		"--cert-file", filepath.Join(c.Dir, "server.crt"), "--key-file", filepath.Join(c.Dir, "server.key"),
		"--trusted-ca-file", filepath.Join(c.Dir, "ca.crt"), "--client-cert-auth",
	}
}

func tlsConfig(c *Certs) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CA)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS is the client's TLS configuration: its certificate, trusting the CA.
func (c *Certs) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	cfg, err := tlsConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
