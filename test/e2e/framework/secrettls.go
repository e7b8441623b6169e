//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// SecretTLS is a client TLS configuration that reads its certificate and trusted CAs from
// Secret ns/name at each connection, as an application that follows the Secret does: the
// server's chain is verified against the Secret's CA file of that moment (not its name: the
// test dials Service and pod names alike).
func (f *Framework) SecretTLS(ns, name string) *tls.Config {
	read := func() (map[string][]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sec, err := f.Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return sec.Data, nil
	}
	return &tls.Config{
		InsecureSkipVerify:     true, // verified in VerifyPeerCertificate, against the Secret's CA file
		SessionTicketsDisabled: true, // every connection verified anew: no resumed session skips the check
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			data, err := read()
			if err != nil {
				return nil, err
			}
			pair, err := tls.X509KeyPair(data[etcdv1beta2.ClientTLSCertKey], data[etcdv1beta2.ClientTLSKeyKey])
			return &pair, err
		},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			data, err := read()
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(data[etcdv1beta2.ClientTLSCAKey])
			leaf, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		},
	}
}
