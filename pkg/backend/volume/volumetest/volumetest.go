// Package volumetest starts a volume server (pkg/backend/volume) over HTTPS for tests, as the
// backup operator's server pod serves a claim.
package volumetest

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// Serve serves b over HTTPS with fresh credentials for "localhost" until the test ends, and
// returns them with URL set to the server (reached by name, as clients reach a Service).
func Serve(t testing.TB, b backend.Backend) volume.Credentials {
	t.Helper()
	creds, err := volume.NewCredentials("", []string{"localhost"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(creds.Cert, creds.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(volume.Handler(b, creds.Token))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	creds.URL = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	return creds
}
