package etcdcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// A CA rotation, for TLS.auto with or without cert-manager. etcd reads its certificate and key
// again at each connection but its trusted CAs only when it starts, so a new CA reaches the
// members in three steps (clusterpki.PlanTrust): the CA files get the new CA beside the old one
// and the members are rolled one at a time (the trusted CAs count in member.SpecHash); once
// every member accepts a certificate of the new CA, the certificates are issued under it; once
// every member serves them, the old CA leaves the CA files and the members are rolled again.
// No member ever meets a certificate it does not trust, and the operator's own client always
// has one every member accepts.

// requeueRotation is how soon a cluster whose CA rotation is under way looks again: its steps
// wait on the members' roll and on the kubelet's copy of the Secrets, which no watch reports.
const requeueRotation = 5 * time.Second

// certSecret is one certificate Secret of a TLS.auto cluster as a pass found it, and the
// certificate the pass has for it.
type certSecret struct {
	ac     clusterpki.Cert
	secret *corev1.Secret // nil: missing
	// cert and key are the new certificate (nil: none), issuers the CAs it came with, why
	// what made it.
	cert, key []byte
	issuers   clusterpki.Trust
	why       string
}

func (s *certSecret) next(cert, key []byte, issuers clusterpki.Trust, why string) {
	s.cert, s.key, s.issuers, s.why = cert, key, issuers, why
}

// state is s for clusterpki.PlanTrust.
func (s *certSecret) state() clusterpki.CertState {
	st := clusterpki.CertState{Present: s.secret != nil, Next: s.cert != nil, NextIssuers: s.issuers}
	if s.secret != nil {
		ca := s.secret.Data[s.ac.CAKey]
		st.Trust, st.Issuers = clusterpki.ParseTrust(ca), clusterpki.IssuersOf(ca, s.secret.Annotations[clusterpki.AnnotationIssuerCAs])
	}
	return st
}

// certSecrets reads the cluster's certificate Secrets (clusterpki.Certs).
func (r *Reconciler) certSecrets(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]*certSecret, error) {
	var out []*certSecret
	for _, ac := range clusterpki.Certs(c) {
		s, err := r.ownedSecret(ctx, c, ac.Secret)
		if err != nil {
			return nil, err
		}
		out = append(out, &certSecret{ac: ac, secret: s})
	}
	return out, nil
}

// trustOf is every CA in the CA files of secrets.
func trustOf(secrets []*certSecret) clusterpki.Trust {
	var t clusterpki.Trust
	for _, s := range secrets {
		t = t.Union(s.state().Trust)
	}
	return t
}

// writeCerts writes into the Secrets what clusterpki.PlanTrust says, once the members are
// seen ready for it: new certificates under a CA the members did not start with only when every
// member accepts one (membersAccept), a CA file without an old CA only when every member
// serves the certificates now in the Secrets (membersServe). It records the trusted CAs and
// the rotation step in status.TLS, which member.SpecHash reads.
func (r *Reconciler) writeCerts(ctx context.Context, c *etcdv1beta2.EtcdCluster, secrets []*certSecret) (time.Duration, error) {
	states := make([]clusterpki.CertState, len(secrets))
	var current, issued clusterpki.Trust // every CA file, every certificate's issuers, as found
	for i, s := range secrets {
		states[i] = s.state()
		current, issued = current.Union(states[i].Trust), issued.Union(states[i].Issuers)
	}
	plan := clusterpki.PlanTrust(states)
	step, writeNext, trust := plan.Step, plan.WriteNext, plan.Trust
	var held string
	if plan.Gate {
		if held = r.membersAccept(ctx, c, plan.Trust, issued, secrets); held != "" {
			step, writeNext = etcdv1beta2.CARotationTrusting, false
		}
	}
	if plan.Retire {
		if held = r.membersServe(ctx, c, secrets); held != "" {
			trust = current
		}
	}
	wrote := false
	for i, s := range secrets {
		var cert, key []byte
		issuers := states[i].Issuers
		if s.secret != nil {
			cert, key = s.secret.Data[s.ac.CertKey], s.secret.Data[s.ac.KeyKey]
		}
		renewed := s.cert != nil && (writeNext || s.secret == nil)
		if renewed {
			cert, key, issuers = s.cert, s.key, s.issuers
		}
		data := map[string][]byte{s.ac.CertKey: cert, s.ac.KeyKey: key, s.ac.CAKey: trust.PEM()}
		annotations := map[string]string{clusterpki.AnnotationIssuerCAs: issuers.IssuerAnnotation()}
		if s.secret != nil && maps.EqualFunc(s.secret.Data, data, bytes.Equal) && s.secret.Annotations[clusterpki.AnnotationIssuerCAs] == annotations[clusterpki.AnnotationIssuerCAs] {
			continue
		}
		if err := r.writeSecret(ctx, c, s.ac.Secret, s.secret, data, annotations); err != nil {
			return 0, err
		}
		wrote = wrote || s.secret != nil
		if s.secret != nil && renewed {
			r.event(c, corev1.EventTypeNormal, "CertificateRenewed", fmt.Sprintf("certificate in secret %s %s; valid until %s", s.ac.Secret, s.why, certs.NotAfter(cert).UTC().Format(time.RFC3339)))
		}
	}
	tlsStatus(c).TrustedCAs, c.Status.TLS.CARotation, c.Status.TLS.Message = trust.Fingerprints(), step, held
	if held != "" {
		klog.FromContext(ctx).V(1).Info("CA rotation waits", "cluster", klog.KObj(c), "step", step, "for", held)
	}
	if wrote {
		r.reportRotation(c, plan, held, trust)
	}
	if step != "" {
		return requeueRotation, nil
	}
	return 0, nil
}

// reportRotation records, as an event, a rotation step plan's write made (a write happens once,
// whatever the cache shows of the status).
func (r *Reconciler) reportRotation(c *etcdv1beta2.EtcdCluster, plan clusterpki.TrustPlan, held string, trust clusterpki.Trust) {
	switch {
	case held != "":
	case plan.Step == etcdv1beta2.CARotationTrusting:
		r.event(c, corev1.EventTypeNormal, "CARotationTrusting", fmt.Sprintf("the CA files now hold %d CAs (%s): the members are rolled one at a time to load them; the certificates are issued under the new CA once every member accepts it",
			trust.Len(), shortFingerprints(trust)))
	case plan.Gate:
		r.event(c, corev1.EventTypeNormal, "CARotationIssuing", "every member accepts a certificate of the new CA: the certificates are issued under it; the old CA leaves the CA files once every member serves them")
	case plan.Retire:
		r.event(c, corev1.EventTypeNormal, "CARotated", fmt.Sprintf("every member serves the certificates of the new CA: the CA files hold only %s, and the members are rolled once more to drop the old CA", shortFingerprints(trust)))
	}
}

func shortFingerprints(t clusterpki.Trust) string {
	var out []string
	for _, fp := range t.Fingerprints() {
		out = append(out, "sha256:"+fp[:16])
	}
	return strings.Join(out, ", ")
}

// readyMemberPods are the pods c controls that run a member, read around the cache, once
// there is a ready one for each of the spec's members; otherwise it says what is missing (a
// member being rolled or replaced is checked once it is back, not skipped).
func (r *Reconciler) readyMemberPods(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]corev1.Pod, string) {
	var list corev1.PodList
	if err := r.APIReader.List(ctx, &list, ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return nil, fmt.Sprintf("listing pods of %s: %v", klog.KObj(c), err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if !controlledBy(&p, c) || p.DeletionTimestamp != nil {
			continue
		}
		if !podReady(&p) {
			return nil, "member " + p.Name + " is not ready"
		}
		out = append(out, p)
	}
	if len(out) < int(c.Spec.Size) {
		return nil, fmt.Sprintf("%d of %d members have a ready pod", len(out), c.Spec.Size)
	}
	return out, ""
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// membersAccept says what keeps the certificates under a new CA from being written, or "" when
// nothing does (issued: the CAs the current certificates came with): every member's pod was made with the current CA files (its spec hash), and its
// client port accepts, as a client's, each new certificate that comes with a CA no current one
// came with and names the cluster's client identity. The peer port is not checked (it pins its
// clients to member names the operator's pod does not have): the CA files of both ports come
// from the same pass's write, and the pod's spec hash says it was made after it.
func (r *Reconciler) membersAccept(ctx context.Context, c *etcdv1beta2.EtcdCluster, trust, issued clusterpki.Trust, secrets []*certSecret) string {
	pods, why := r.readyMemberPods(ctx, c)
	if why != "" {
		return why
	}
	want := member.SpecHash(c)
	// The certificates to check with: those of a new CA that the members' client port takes
	// as a client's, i.e. that name the cluster's client identity (the operator's and the
	// server's; the peer certificate is refused there: pinnedClientFlags).
	var probes []tls.Certificate
	for _, s := range secrets {
		if s.cert == nil || issued.Contains(s.issuers) {
			continue
		}
		pair, err := tls.X509KeyPair(s.cert, s.key)
		if err != nil {
			return fmt.Sprintf("the new certificate of %s: %v", s.ac.Secret, err)
		}
		if pair.Leaf == nil {
			if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
				return fmt.Sprintf("the new certificate of %s: %v", s.ac.Secret, err)
			}
		}
		if pair.Leaf.VerifyHostname(c.ClientIdentity()) == nil {
			probes = append(probes, pair)
		}
	}
	if len(probes) == 0 {
		return "no client certificate of the new CA to check the members with yet (the operator's or the server's)"
	}
	for _, p := range pods {
		if member.PodSpecHash(&p) != want {
			return "member " + p.Name + " has not restarted with the new CA files yet"
		}
		for _, pair := range probes {
			if err := acceptsClientCert(ctx, member.ClientURL(c, p.Name), trust, pair); err != nil {
				return fmt.Sprintf("member %s does not accept a certificate of the new CA yet: %v", p.Name, err)
			}
		}
	}
	return ""
}

// membersServe says what keeps the old CA in the CA files, or "" when nothing does: every
// member's client and peer ports serve the certificates now in the server and peer Secrets
// (the kubelet copies a changed Secret into the pods' files within about a minute).
func (r *Reconciler) membersServe(ctx context.Context, c *etcdv1beta2.EtcdCluster, secrets []*certSecret) string {
	pods, why := r.readyMemberPods(ctx, c)
	if why != "" {
		return why
	}
	tlsSecrets := c.TLSSecrets()
	for _, s := range secrets {
		var port string
		switch s.ac.Secret {
		case tlsSecrets.Member.ServerSecret:
			port = "client"
		case tlsSecrets.Member.PeerSecret:
			port = "peer"
		default:
			continue
		}
		block, _ := pem.Decode(s.secret.Data[s.ac.CertKey])
		pair, err := tls.X509KeyPair(s.secret.Data[s.ac.CertKey], s.secret.Data[s.ac.KeyKey])
		if block == nil || err != nil {
			return "the certificate in " + s.ac.Secret + " does not parse"
		}
		for _, p := range pods {
			u := member.ClientURL(c, p.Name)
			if port == "peer" {
				u = member.PeerURL(c, p.Name)
			}
			served, err := servedCert(ctx, u, pair)
			if err != nil {
				return fmt.Sprintf("member %s's %s port: %v", p.Name, port, err)
			}
			if !bytes.Equal(served, block.Bytes) {
				return fmt.Sprintf("member %s's %s port still serves its former certificate", p.Name, port)
			}
		}
	}
	return ""
}

// probeTimeout bounds each connection of membersAccept and membersServe.
const probeTimeout = 5 * time.Second

// acceptsClientCert reports whether the etcd at rawURL answers a request made with client
// certificate cert: any HTTP answer means the TLS layer accepted it (with TLS 1.3 a refused
// client certificate shows only when the first response is read).
func acceptsClientCert(ctx context.Context, rawURL string, trust clusterpki.Trust, cert tls.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(rawURL, "/")+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.Body.Close()
}

// servedCert is the DER of the certificate the TLS server at rawURL presents. Nothing is
// trusted on it (the caller compares it with the one it expects, byte for byte), so the
// server's chain is not verified here; cert is offered as the client certificate, and what
// the server thinks of it afterwards does not matter.
func servedCert(ctx context.Context, rawURL string, cert tls.Certificate) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var served []byte
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: probeTimeout}, Config: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // nothing is trusted on it: compared byte for byte by the caller
		Certificates:       []tls.Certificate{cert},
		MinVersion:         tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				served = cs.PeerCertificates[0].Raw
			}
			return nil
		},
	}}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if conn != nil {
		_ = conn.Close()
	}
	if served == nil {
		return nil, fmt.Errorf("no certificate served: %w", err)
	}
	return served, nil
}
