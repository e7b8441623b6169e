package volume

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// Keys of the Secret that says how to reach a volume server: what the server mounts (token,
// certificate and key) and what its clients read (URL, token, certificate).
const (
	SecretURLKey   = "url"
	SecretTokenKey = "token"
	SecretCertKey  = "tls.crt"
	SecretKeyKey   = "tls.key"
	// SecretDialKey is never in the Secret: a client that reaches the server through a tunnel
	// (kubectl etcd through a port-forward) adds it to the data it read, with the address to
	// dial instead of the URL's host; the certificate is still checked for the URL's host.
	SecretDialKey = "dial"
)

// Credentials is what a server needs and what it hands to its clients, as the Secret holds it.
type Credentials struct {
	// URL is the server's base URL, https://<service>.<namespace>.svc:<port>.
	URL string
	// Token is the bearer token.
	Token string
	// Cert and Key are the server's self-signed certificate and its key, PEM.
	Cert, Key []byte
}

// NewCredentials makes a random 256-bit token and a self-signed ECDSA P-256 certificate for
// hosts, valid for validFor, for a server at url.
func NewCredentials(url string, hosts []string, now time.Time, validFor time.Duration) (Credentials, error) {
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return Credentials{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Credentials{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Credentials{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0]},
		DNSNames:              hosts,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		// The certificate is its own trust anchor: clients pin exactly it (RootCAs holds it
		// alone), so it must be able to act as one.
		IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Credentials{}, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{
		URL:   url,
		Token: hex.EncodeToString(tok),
		Cert:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, nil
}

// Data is the Secret data of c.
func (c Credentials) Data() map[string][]byte {
	return map[string][]byte{SecretURLKey: []byte(c.URL), SecretTokenKey: []byte(c.Token), SecretCertKey: c.Cert, SecretKeyKey: c.Key}
}

// ClientConfig reads a client's Config from the Secret data of a server: its URL and token, and
// a transport that trusts the server's own certificate and nothing else (no system roots).
// The key is not needed and may be absent.
func ClientConfig(data map[string][]byte) (Config, error) {
	url, tok, cert := string(data[SecretURLKey]), string(data[SecretTokenKey]), data[SecretCertKey]
	if url == "" || tok == "" || len(cert) == 0 {
		return Config{}, fmt.Errorf("volume server secret: needs %q, %q and %q", SecretURLKey, SecretTokenKey, SecretCertKey)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cert) {
		return Config{}, errors.New("volume server secret: " + SecretCertKey + " holds no PEM certificate")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if addr := string(data[SecretDialKey]); addr != "" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
	}
	return Config{Endpoint: url, Token: tok, HTTPClient: &http.Client{Transport: tr}}, nil
}

// Expires is when the certificate in Secret data ends; zero when it does not parse.
func Expires(data map[string][]byte) time.Time {
	b, _ := pem.Decode(data[SecretCertKey])
	if b == nil {
		return time.Time{}
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return time.Time{}
	}
	return c.NotAfter
}
