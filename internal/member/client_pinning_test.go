package member

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestClientsArePinnedToTheirCluster runs a real etcd member of TLS.auto cluster "a" with the
// client flags the operator gives it and the certificates TLS.auto makes (clusterpki.Certs),
// all signed by one issuer, and connects to its client port: a's operator certificate and a's
// server certificate (which etcd's gateway dials its own member with) are accepted; cluster
// b's operator certificate, and b's of another namespace, from the same issuer, are refused, as
// is a client certificate naming no host (issue 30: a shared issuer is not shared trust, for
// clients as for peers).
func TestClientsArePinnedToTheirCluster(t *testing.T) {
	for _, version := range []string{snapshottest.Version, snapshottest.OldVersion} {
		t.Run(version, func(t *testing.T) {
			ca, err := certs.NewCA("shared issuer", time.Now(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			cluster := func(ns, name string) *etcdv1beta2.EtcdCluster {
				return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: etcdv1beta2.ClusterSpec{TLS: &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}}}
			}
			issue := func(c *etcdv1beta2.EtcdCluster, which int) ([]byte, []byte, tls.Certificate) {
				return issuePair(t, ca, clusterpki.Certs(c)[which].Leaf)
			}
			const server, operator = 1, 2
			a := cluster("ns", "a")
			dir := t.TempDir()
			write := func(name string, data []byte) string {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			srvCrt, srvKey, srvPair := issue(a, server)
			e := snapshottest.NewEtcd(t, "a-0", nil)
			e.Endpoint = strings.Replace(e.Endpoint, "http://", "https://", 1)
			e.Dir = snapshottest.BinDirOf(version)
			e.Args = append([]string{"--client-cert-auth=true", "--trusted-ca-file=" + write("ca.crt", ca.CertPEM),
				"--cert-file=" + write("server.crt", srvCrt), "--key-file=" + write("server.key", srvKey)},
				pinnedClientFlags(a)...)
			e.Start(t, snapshottest.InitialCluster(e), "new")

			roots := clusterpki.ParseTrust(ca.CertPEM).Pool()
			get := func(cert tls.Certificate) error {
				cli := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
					RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: "localhost", MinVersion: tls.VersionTLS12}}}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.Endpoint+"/version", nil)
				if err != nil {
					return err
				}
				resp, err := cli.Do(req)
				if err != nil {
					return err
				}
				return resp.Body.Close()
			}
			_, _, aOperator := issue(a, operator)
			deadline := time.Now().Add(snapshottest.ReadyTimeout)
			for err := get(aOperator); err != nil; err = get(aOperator) {
				if time.Now().After(deadline) {
					t.Fatalf("cluster a's operator certificate was refused: %v", err)
				}
				time.Sleep(100 * time.Millisecond) //nolint:forbidigo // waiting for the member to serve
			}
			if err := get(srvPair); err != nil {
				t.Errorf("cluster a's server certificate (etcd's gateway) was refused: %v", err)
			}
			for _, other := range []*etcdv1beta2.EtcdCluster{cluster("ns", "b"), cluster("other", "a")} {
				if _, _, pair := issue(other, operator); get(pair) == nil {
					t.Errorf("the operator certificate of %s/%s (same issuer) was accepted by ns/a", other.Namespace, other.Name)
				}
			}
			if _, _, nameless := issuePair(t, ca, certs.Leaf{CommonName: "etcd-operator", Client: true}); get(nameless) == nil {
				t.Error("a client certificate naming no host (the operator's before pinning) was accepted")
			}
		})
	}
}
