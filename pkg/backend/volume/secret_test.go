package volume

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// serveTLS starts Handler over HTTPS with the certificate of creds and returns its URL.
func serveTLS(t *testing.T, creds Credentials) string {
	t.Helper()
	srv0, b := serve(t)
	srv0.Close()
	pair, err := tls.X509KeyPair(creds.Cert, creds.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(Handler(b, creds.Token))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// By name, as clients reach a server pod by its Service's name.
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
}

func credentials(t *testing.T) Credentials {
	t.Helper()
	c, err := NewCredentials("", []string{"localhost"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pinnedClient(t *testing.T, data map[string][]byte) *Client {
	t.Helper()
	cfg, err := ClientConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestAcceptanceOverPinnedTLS: a client made from the server's Secret data alone (URL, token,
// certificate) keeps the backend contract over HTTPS.
func TestAcceptanceOverPinnedTLS(t *testing.T) {
	creds := credentials(t)
	creds.URL = serveTLS(t, creds)
	data := creds.Data()
	delete(data, SecretKeyKey) // clients never need the key
	backendtest.AcceptanceTest(t, pinnedClient(t, data))
}

// TestOtherCertificateRefused: a client pinned to one server's certificate refuses a server
// with any other, even one that holds the right token, so the token never reaches it.
func TestOtherCertificateRefused(t *testing.T) {
	real, impostor := credentials(t), credentials(t)
	impostor.Token = real.Token
	real.URL = serveTLS(t, impostor)
	c := pinnedClient(t, real.Data())
	_, err := c.List(t.Context(), "")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("List against a server with another certificate = %v, want a certificate error", err)
	}
}

func TestClientConfigNeedsEveryKey(t *testing.T) {
	full := credentials(t)
	full.URL = "https://x.ns.svc:8443"
	for _, k := range []string{SecretURLKey, SecretTokenKey, SecretCertKey} {
		data := full.Data()
		delete(data, k)
		if _, err := ClientConfig(data); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("without %s: %v, want an error naming it", k, err)
		}
	}
	data := full.Data()
	data[SecretCertKey] = []byte("not PEM")
	if _, err := ClientConfig(data); err == nil {
		t.Error("a certificate that is not PEM was accepted")
	}
	if got := Expires(full.Data()); got.Before(time.Now().Add(50*time.Minute)) || got.After(time.Now().Add(time.Hour)) {
		t.Errorf("Expires = %v, want about an hour from now", got)
	}
}

// TestDialThroughATunnel: with a dial address (a port-forward's local end), the client reaches
// the server there and still checks the certificate for the URL's host.
func TestDialThroughATunnel(t *testing.T) {
	creds := credentials(t)
	local := serveTLS(t, creds)       // https://localhost:<port>, the tunnel's end
	creds.URL = "https://localhost:1" // the name in the certificate, at a port nothing listens on
	data := creds.Data()
	data[SecretDialKey] = []byte(strings.TrimPrefix(local, "https://"))
	if _, err := pinnedClient(t, data).List(t.Context(), ""); err != nil {
		t.Fatalf("List through the dial address: %v", err)
	}
	creds.URL = "https://other-host:1" // a name the certificate does not hold
	data = creds.Data()
	data[SecretDialKey] = []byte(strings.TrimPrefix(local, "https://"))
	if _, err := pinnedClient(t, data).List(t.Context(), ""); err == nil {
		t.Fatal("a server whose certificate does not name the URL's host was accepted through the tunnel")
	}
}
