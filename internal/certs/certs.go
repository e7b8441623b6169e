// Package certs makes and checks the certificates of TLS.auto clusters: one CA per cluster and
// the peer, server and client certificates it signs (ECDSA P-256, PEM). It is pure: the etcd
// controller decides when to call it and stores the results in Secrets.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// backdate is how far before now a certificate's validity starts, so that a member whose clock
// is slightly behind the operator's accepts it.
const backdate = 5 * time.Minute

// CA is a certificate authority and its key.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// Leaf describes a certificate the CA issues.
type Leaf struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	// Server and Client are the extended key usages (a peer certificate has both).
	Server, Client bool
}

// NewCA makes a self-signed CA valid from now for validity.
func NewCA(commonName string, now time.Time, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the CA key: %w", err)
	}
	return ParseCA(pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER))
}

// ParseCA reads a CA from its PEM certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("CA certificate: not a CA")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("CA key: no PEM block")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Issue signs a certificate for l valid from now for validity (never beyond the CA's own
// expiry) and returns it and its new key, PEM-encoded.
func (ca *CA) Issue(l Leaf, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key for %s: %w", l.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: l.CommonName},
		DNSNames: l.DNSNames, IPAddresses: l.IPs,
		NotBefore: now.Add(-backdate), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: l.usages(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", l.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key of %s: %w", l.CommonName, err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

// Stale says why the certificate and key in certPEM and keyPEM must be issued again for l, or
// "" when they are a pair the CA signed for exactly l's names and usages that stays valid past
// now+renewBefore.
func (ca *CA) Stale(certPEM, keyPEM []byte, l Leaf, now time.Time, renewBefore time.Duration) string {
	cert, err := parseCert(certPEM)
	if err != nil {
		return "missing or unreadable: " + err.Error()
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return "no key"
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil || !key.PublicKey.Equal(cert.PublicKey) {
		return "the key does not match the certificate"
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if err := verify(cert, x509.VerifyOptions{Roots: pool, CurrentTime: now}, l); err != nil {
		return "not valid under the cluster's CA: " + err.Error()
	}
	if !slices.Equal(cert.DNSNames, l.DNSNames) || !slices.EqualFunc(cert.IPAddresses, l.IPs, net.IP.Equal) {
		return fmt.Sprintf("names %v %v, want %v %v", cert.DNSNames, cert.IPAddresses, l.DNSNames, l.IPs)
	}
	if due := cert.NotAfter.Add(-renewBefore); !now.Before(due) {
		return fmt.Sprintf("expires at %s, renewed %s before", cert.NotAfter.UTC().Format(time.RFC3339), renewBefore)
	}
	return ""
}

// NotAfter is the expiry of the PEM certificate, zero when it does not parse.
func NotAfter(certPEM []byte) time.Time {
	cert, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}
	}
	return cert.NotAfter
}

func (l Leaf) usages() []x509.ExtKeyUsage {
	var u []x509.ExtKeyUsage
	if l.Server {
		u = append(u, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		u = append(u, x509.ExtKeyUsageClientAuth)
	}
	return u
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return n, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
