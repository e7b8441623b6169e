package factory

import (
	"crypto/tls"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// testPKI is a private CA and a server certificate it signed for 127.0.0.1, as an on-prem
// object store behind a company CA would have (snapshottest.NewCerts makes both).
type testPKI struct {
	caPEM, certPEM, keyPEM []byte
	serverCert             tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	c := snapshottest.NewCerts(t)
	p := testPKI{caPEM: c.CA, certPEM: c.ServerCert, keyPEM: c.ServerKey}
	var err error
	if p.serverCert, err = tls.X509KeyPair(p.certPEM, p.keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}
