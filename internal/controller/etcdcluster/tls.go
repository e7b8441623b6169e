package etcdcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Defaults and bounds of TLS.auto.
const (
	defaultCertValidity = 90 * 24 * time.Hour
	// caValidity: the CA outlives every certificate it signs; it is not rotated by the operator.
	caValidity = 10 * 365 * 24 * time.Hour
	// minRenewBefore leaves a renewed certificate time to reach the members: the operator looks
	// every requeueSteady, the kubelet refreshes mounted Secrets within about a minute.
	minRenewBefore = 5 * time.Minute
)

// Keys of the CA Secret of a TLS.auto cluster.
const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// autoCert is one certificate of a TLS.auto cluster: its Secret, the keys it is stored under,
// and what it certifies.
type autoCert struct {
	secret, certKey, keyKey, caKey string
	leaf                           certs.Leaf
}

// autoCerts are the peer, server and operator client certificates of c. Peer and server
// certificates name every member (*.<cluster>.<ns>.svc, the names in the members' URLs) and the
// server one also the client Service and localhost (etcd's gateway dials itself).
func autoCerts(c *etcdv1beta2.EtcdCluster) []autoCert {
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
	return []autoCert{
		{s.Member.PeerSecret, "peer.crt", "peer.key", "peer-ca.crt",
			certs.Leaf{CommonName: c.Name + " peer", DNSNames: members, Server: true, Client: true}},
		{s.Member.ServerSecret, "server.crt", "server.key", "server-ca.crt",
			certs.Leaf{CommonName: c.Name + " server", DNSNames: server, IPs: []net.IP{net.IPv4(127, 0, 0, 1).To4()}, Server: true, Client: true}},
		{s.OperatorSecret, etcdv1beta2.ClientTLSCertKey, etcdv1beta2.ClientTLSKeyKey, etcdv1beta2.ClientTLSCAKey,
			certs.Leaf{CommonName: "etcd-operator", Client: true}},
	}
}

// certDurations are the validity and renewal window of c's certificates, defaulted.
func certDurations(a *etcdv1beta2.AutoTLS) (validity, renewBefore time.Duration) {
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

// reconcileTLS makes the certificates of a TLS.auto cluster before any member pod mounts them
// (with issuerRef, cert-manager does: reconcileIssuedTLS): the CA once, then each certificate that is missing, was signed by another CA, names other
// hosts, or is inside its renewal window. Renewing rewrites the Secret in place; the kubelet
// updates the mounted files and etcd reads them at its next connection, so members keep
// serving with no restart. Secrets of those names the cluster does not control are never
// touched: NotOwned.
func (r *Reconciler) reconcileTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		return nil
	}
	if ref := c.Spec.TLS.Auto.IssuerRef; ref != nil {
		if err := issuerAllowed(ref, r.Options.AllowedIssuerKinds); err != nil {
			return err
		}
		return r.reconcileIssuedTLS(ctx, c)
	}
	now := r.Clock.Now()
	validity, renewBefore := certDurations(c.Spec.TLS.Auto)
	ca, err := r.ensureCA(ctx, c, now)
	if err != nil {
		return err
	}
	for _, ac := range autoCerts(c) {
		s, err := r.ownedSecret(ctx, c, ac.secret)
		if err != nil {
			return err
		}
		why := "missing"
		if s != nil {
			why = ca.Stale(s.Data[ac.certKey], s.Data[ac.keyKey], ac.leaf, now, renewBefore)
			if why == "" && !bytes.Equal(s.Data[ac.caKey], ca.CertPEM) {
				why = "its CA file is not the cluster's CA"
			}
		}
		if why == "" {
			continue
		}
		crt, key, err := ca.Issue(ac.leaf, now, validity)
		if err != nil {
			return err
		}
		data := map[string][]byte{ac.certKey: crt, ac.keyKey: key, ac.caKey: ca.CertPEM}
		if err := r.writeSecret(ctx, c, ac.secret, s, data); err != nil {
			return err
		}
		if s != nil {
			r.event(c, corev1.EventTypeNormal, "CertificateRenewed", fmt.Sprintf("certificate in secret %s issued again (%s); valid until %s", ac.secret, why, certs.NotAfter(crt).UTC().Format(time.RFC3339)))
		}
	}
	return nil
}

// issuerAllowed refuses an issuer that other namespaces may share (a ClusterIssuer, an
// external issuer kind) unless the administrator listed its kind: such an issuer signs this
// cluster's member names for whoever may request a Certificate from it, and the members trust
// what it signs.
func issuerAllowed(ref *etcdv1beta2.CertManagerIssuerRef, allowed []string) error {
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

// ensureCA returns the cluster's CA, made and stored on first use. A CA Secret that does not
// parse is not replaced (every certificate depends on it): InvalidSpec, for a person to look at.
func (r *Reconciler) ensureCA(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time) (*certs.CA, error) {
	name := c.Name + etcdv1beta2.AutoTLSCASuffix
	s, err := r.ownedSecret(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if s != nil {
		ca, err := certs.ParseCA(s.Data[caCertKey], s.Data[caKeyKey])
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "TLS.auto: the CA in secret %s does not parse (%v): delete the secret and the cluster's certificates are made anew", name, err)
		}
		return ca, nil
	}
	ca, err := certs.NewCA(fmt.Sprintf("etcd-operator CA of %s/%s", c.Namespace, c.Name), now, caValidity)
	if err != nil {
		return nil, err
	}
	if err := r.writeSecret(ctx, c, name, nil, map[string][]byte{caCertKey: ca.CertPEM, caKeyKey: ca.KeyPEM}); err != nil {
		return nil, err
	}
	r.event(c, corev1.EventTypeNormal, "CertificatesCreated", fmt.Sprintf("TLS.auto: CA in secret %s, valid until %s", name, ca.Cert.NotAfter.UTC().Format(time.RFC3339)))
	return ca, nil
}

// ownedSecret reads Secret name from the API server (Secrets are never cached): nil when it does
// not exist, errNotOwned when c does not control it.
func (r *Reconciler) ownedSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, ctrlclient.ObjectKey{Namespace: c.Namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting secret %s of %s: %w", name, klog.KObj(c), err)
	case !controlledBy(s, c):
		return nil, notOwned("Secret", s, c)
	}
	return s, nil
}

// writeSecret creates Secret name controlled by c with data, or replaces the data of existing
// (optimistic lock: a concurrent change makes the pass retry).
func (r *Reconciler) writeSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, existing *corev1.Secret, data map[string][]byte) error {
	if existing != nil {
		existing.Data = data
		if err := r.Update(ctx, existing); err != nil {
			return fmt.Errorf("updating secret %s of %s: %w", name, klog.KObj(c), err)
		}
		return nil
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: member.SelectorLabels(c)}, Data: data}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme()); err != nil {
		return fmt.Errorf("owning secret %s: %w", name, err)
	}
	return r.createOwned(ctx, c, s, &corev1.Secret{}, "Secret")
}
