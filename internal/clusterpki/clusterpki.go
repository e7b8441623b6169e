// Package clusterpki is the public key infrastructure of an EtcdCluster with TLS.auto, without
// a Kubernetes client: which certificates the cluster needs (peer, server, the operator's
// client), the Secrets and keys they are stored under, the names and addresses they certify,
// their validity and renewal window, the cluster's CA, and, when cert-manager issues them
// (TLS.auto.issuerRef), which issuers are allowed, the Certificate spec the operator asks for and
// what a Certificate's status says. The EtcdCluster controller reads and writes the Secrets and
// Certificates (internal/controller/etcdcluster, tls.go and tls_certmanager.go); internal/certs
// makes and checks the certificates themselves.
package clusterpki

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Defaults and bounds of TLS.auto.
const (
	defaultCertValidity = 90 * 24 * time.Hour
	// caValidity: the CA outlives every certificate it signs.
	caValidity = 10 * 365 * 24 * time.Hour
	// CARenewBefore is how long before its CA expires the operator moves a cluster to a new
	// one (TLSStatus.caRotation): long enough for every certificate it signed to be renewed
	// under the new one many times over.
	CARenewBefore = 2 * 365 * 24 * time.Hour
	// minRenewBefore leaves a renewed certificate time to reach the members: the operator looks
	// every requeueSteady, the kubelet refreshes mounted Secrets within about a minute.
	minRenewBefore = 5 * time.Minute
)

// Keys of the CA Secret of a TLS.auto cluster.
const (
	// CACertKey holds the CA's certificate (PEM).
	CACertKey = "ca.crt"
	// CAKeyKey holds the CA's private key (PEM).
	CAKeyKey = "ca.key"
)

// Cert is one certificate of a TLS.auto cluster: its Secret, the keys it is stored under,
// and what it certifies.
type Cert struct {
	// Secret is the name of the Secret the members (or the operator) read the certificate
	// from; with cert-manager, also the name of the Certificate.
	Secret string
	// CertKey, KeyKey and CAKey are the Secret's keys of the certificate, its private key and
	// the CA's certificate.
	CertKey, KeyKey, CAKey string
	// Leaf is what the certificate certifies.
	Leaf certs.Leaf
}

// Certs are the peer, server and operator client certificates of c. Peer and server
// certificates name every member (*.<cluster>.<ns>.svc, the names in the members' URLs) and the
// server one also the client Service and localhost (etcd's gateway dials itself). c has
// TLS.auto.
func Certs(c *etcdv1beta2.EtcdCluster) []Cert {
	s := c.TLSSecrets()
	// With the cluster domain too: etcd checks a peer's client certificate against the reverse
	// lookup of the peer's address (<pod>.<cluster>.<ns>.svc.<domain>), and a wildcard only
	// matches that full name.
	domain := "cluster.local"
	if c.Spec.Pod != nil && c.Spec.Pod.ClusterDomain != "" {
		domain = strings.TrimPrefix(c.Spec.Pod.ClusterDomain, ".")
	}
	domains := []string{"svc", "svc." + domain}
	var members, clients []string
	for _, d := range domains {
		members = append(members, fmt.Sprintf("*.%s.%s.%s", c.PeerServiceName(), c.Namespace, d))
		clients = append(clients, fmt.Sprintf("%s.%s.%s", c.ClientServiceName(), c.Namespace, d))
	}
	server := append(append(append([]string{}, members...), clients...), c.ClientServiceName(), c.ClientServiceName()+"."+c.Namespace, "localhost")
	return []Cert{
		{s.Member.PeerSecret, "peer.crt", "peer.key", "peer-ca.crt",
			certs.Leaf{CommonName: c.Name + " peer", DNSNames: members, Server: true, Client: true}},
		{s.Member.ServerSecret, "server.crt", "server.key", "server-ca.crt",
			certs.Leaf{CommonName: c.Name + " server", DNSNames: server, IPs: []net.IP{net.IPv4(127, 0, 0, 1).To4()}, Server: true, Client: true}},
		{s.OperatorSecret, etcdv1beta2.ClientTLSCertKey, etcdv1beta2.ClientTLSKeyKey, etcdv1beta2.ClientTLSCAKey,
			certs.Leaf{CommonName: "etcd-operator", DNSNames: []string{c.ClientIdentity()}, Client: true}},
	}
}

// Names are the names of cs's Secrets (and, with cert-manager, of their Certificates).
func Names(cs []Cert) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Secret)
	}
	return out
}

// Durations are the validity and renewal window of the certificates of a, defaulted.
func Durations(a *etcdv1beta2.AutoTLS) (validity, renewBefore time.Duration) {
	validity = defaultCertValidity
	if a.Validity != nil {
		validity = a.Validity.Duration
	}
	renewBefore = max(validity/3, minRenewBefore)
	if a.RenewBefore != nil {
		renewBefore = max(a.RenewBefore.Duration, minRenewBefore)
	}
	return validity, renewBefore
}

// NewCA makes a CA of cluster c, valid from now for ten years (the operator rotates it
// CARenewBefore its expiry, or when asked: etcdv1beta2.AnnotationRotateCA).
func NewCA(c *etcdv1beta2.EtcdCluster, now time.Time) (*certs.CA, error) {
	return certs.NewCA(fmt.Sprintf("etcd-operator CA of %s/%s", c.Namespace, c.Name), now, caValidity)
}

// IssuerAllowed refuses an issuer that other namespaces may share (a ClusterIssuer, an
// external issuer kind) unless the administrator listed its kind (allowed holds
// "<group>/<kind>" entries, the etcd operator's --allowed-issuer-kinds): such an issuer signs
// this cluster's member names for whoever may request a Certificate from it, and the members
// trust what it signs. The error carries reason IssuerNotAllowed.
func IssuerAllowed(ref *etcdv1beta2.CertManagerIssuerRef, allowed []string) error {
	group, kind := ref.Group, ref.Kind
	if group == "" {
		group = "cert-manager.io"
	}
	if kind == "" {
		kind = "Issuer"
	}
	if (group == "cert-manager.io" && kind == "Issuer") || slices.Contains(allowed, group+"/"+kind) {
		return nil
	}
	return reason.Errorf(etcdv1beta2.ReasonIssuerNotAllowed,
		"TLS.auto.issuerRef: %s/%s %s may be shared by other namespaces, which could then get certificates this cluster trusts; use an Issuer in the cluster's namespace, or ask the administrator to list %s/%s in the etcd operator's --allowed-issuer-kinds",
		group, kind, ref.Name, group, kind)
}
