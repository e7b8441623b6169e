//go:build e2e

package framework

import (
	"net/url"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TLSMinIO starts, for this test only, a MinIO that serves HTTPS with a certificate of a CA made
// in the test, on the host address where the pods reach the other object stores, and returns it
// as ObjStores (S3 only; S3CA is the CA's PEM) and the CA's PEM. Nothing in the cluster trusts
// that CA unless a spec names it (endpointCA).
func (s *ObjStores) TLSMinIO(t testing.TB) (*ObjStores, []byte) {
	t.Helper()
	u, err := url.Parse(s.S3Endpoint)
	if err != nil {
		t.Fatalf("OBJSTORE_S3_ENDPOINT %q: %v", s.S3Endpoint, err)
	}
	certs := snapshottest.NewCertsFor(t, u.Hostname())
	endpoint := backendtest.StartTLSMinIO(t, u.Hostname(), certs.ServerCert, certs.ServerKey, certs.CA)
	return &ObjStores{
		EnvFile: s.EnvFile, S3Endpoint: endpoint, S3Region: "us-east-1",
		S3AccessKey: backendtest.MinIOUser, S3SecretKey: backendtest.MinIOPassword, S3CA: certs.CA,
	}, certs.CA
}
