package member

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// peerLeaf is the peer certificate TLS.auto makes for cluster name in namespace ns.
func peerLeaf(t *testing.T, ca *certs.CA, ns, name string) tls.Certificate {
	t.Helper()
	_, _, pair := issuePair(t, ca, certs.Leaf{CommonName: name + " peer", Server: true, Client: true,
		DNSNames: []string{"*." + name + "." + ns + ".svc", "*." + name + "." + ns + ".svc.cluster.local"}})
	return pair
}

// issuePair has ca issue leaf for an hour: the PEM certificate and key, and the pair.
func issuePair(t *testing.T, ca *certs.CA, leaf certs.Leaf) (crt, key []byte, pair tls.Certificate) {
	t.Helper()
	crt, key, err := ca.Issue(leaf, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if pair, err = tls.X509KeyPair(crt, key); err != nil {
		t.Fatal(err)
	}
	return crt, key, pair
}

// TestPeersArePinnedToTheirCluster runs a real etcd member of TLS.auto cluster "a" with the
// peer flags the operator gives it and connects to its peer port as clusters' peers would:
// with a's peer certificate from an address whose reverse DNS names no member (the situation of
// every new member before its DNS record exists) it is accepted, with the peer certificate the
// same CA made for cluster "b" it is refused (issue 30: a shared issuer is no longer shared
// trust). Before, a's own certificate was refused too, until DNS caught up.
func TestPeersArePinnedToTheirCluster(t *testing.T) {
	for _, version := range []string{snapshottest.Version, snapshottest.OldVersion} {
		t.Run(version, func(t *testing.T) {
			ca, err := certs.NewCA("shared issuer", time.Now(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			write := func(name string, data []byte) string {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			crt, key, err := ca.Issue(certs.Leaf{CommonName: "a peer", Server: true, Client: true,
				DNSNames: []string{"*.a.ns.svc", "*.a.ns.svc.cluster.local"}}, time.Now(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
				Spec: etcdv1beta2.ClusterSpec{TLS: &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}}}
			e := snapshottest.NewEtcd(t, "a-0", nil)
			e.PeerURL = strings.Replace(e.PeerURL, "http://", "https://", 1)
			e.Dir = snapshottest.BinDirOf(version)
			e.Args = append([]string{"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + write("ca.crt", ca.CertPEM),
				"--peer-cert-file=" + write("peer.crt", crt), "--peer-key-file=" + write("peer.key", key)},
				pinnedPeerFlags(c, "a-0", strings.TrimPrefix(version, "v"))...)
			e.Start(t, snapshottest.InitialCluster(e), "new")
			e.WaitReady(t)

			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca.CertPEM)
			u, err := url.Parse(e.PeerURL)
			if err != nil {
				t.Fatal(err)
			}
			get := func(cert tls.Certificate) error {
				cli := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
					RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: Host(c, "a-1"), MinVersion: tls.VersionTLS12}}}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+u.Host+"/version", nil)
				if err != nil {
					return err
				}
				resp, err := cli.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				return nil
			}
			if err := get(peerLeaf(t, ca, "ns", "a")); err != nil {
				t.Errorf("a peer of cluster a was refused: %v", err)
			}
			if err := get(peerLeaf(t, ca, "ns", "b")); err == nil {
				t.Errorf("a peer certificate of cluster b (same CA) was accepted by cluster a")
			}
			if err := get(peerLeaf(t, ca, "other", "a")); err == nil {
				t.Errorf("a peer certificate of cluster a of another namespace (same CA) was accepted")
			}
		})
	}
}
