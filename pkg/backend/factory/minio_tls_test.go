package factory

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// Credentials of the MinIO a test starts on a free loopback port (never reachable from outside).
const (
	tlsMinIOUser     = backendtest.MinIOUser
	tlsMinIOPassword = backendtest.MinIOPassword
)

// startTLSMinIO starts a MinIO serving HTTPS only, with pki's server certificate, on a free
// loopback port.
func startTLSMinIO(t *testing.T, pki testPKI) string {
	t.Helper()
	return backendtest.StartTLSMinIO(t, "127.0.0.1", pki.certPEM, pki.keyPEM, pki.caPEM)
}

func awsSecret() map[string][]byte { return backendtest.MinIOSecret() }
