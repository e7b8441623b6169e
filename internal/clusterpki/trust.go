package clusterpki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// AnnotationIssuerCAs, on a certificate Secret of a TLS.auto cluster, lists the SHA-256
// fingerprints of the CA certificates its certificate was issued with (comma-separated). The
// Secret's CA file may hold more during a CA rotation: the CAs the members are given to trust.
// A Secret without it (written before the operator recorded it) was issued under every CA in
// its CA file.
const AnnotationIssuerCAs = "etcd.database.coreos.com/issuer-cas"

// Trust is a set of CA certificates, in the order they were first seen, without duplicates.
type Trust struct {
	certs []*x509.Certificate
	fps   []string
}

// ParseTrust reads the CA certificates of PEM bundles into one Trust; blocks that are not
// certificates, or do not parse, are skipped.
func ParseTrust(bundles ...[]byte) Trust {
	var t Trust
	for _, rest := range bundles {
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			if c, err := x509.ParseCertificate(block.Bytes); err == nil {
				t.add(c)
			}
		}
	}
	return t
}

func (t *Trust) add(c *x509.Certificate) {
	fp := Fingerprint(c)
	if !slices.Contains(t.fps, fp) {
		t.certs, t.fps = append(t.certs, c), append(t.fps, fp)
	}
}

// Fingerprint is the SHA-256 of c's DER encoding, in hex.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// Empty reports whether t holds no certificate.
func (t Trust) Empty() bool { return len(t.certs) == 0 }

// Len is the number of certificates in t.
func (t Trust) Len() int { return len(t.certs) }

// Fingerprints of t's certificates, in t's order.
func (t Trust) Fingerprints() []string { return slices.Clone(t.fps) }

// Union is t's certificates, then those of o that t does not hold.
func (t Trust) Union(o Trust) Trust {
	var u Trust
	for _, c := range append(slices.Clone(t.certs), o.certs...) {
		u.add(c)
	}
	return u
}

// Contains reports whether every certificate of o is in t.
func (t Trust) Contains(o Trust) bool {
	for _, fp := range o.fps {
		if !slices.Contains(t.fps, fp) {
			return false
		}
	}
	return true
}

// Equal reports whether t and o hold the same certificates, in any order.
func (t Trust) Equal(o Trust) bool { return t.Contains(o) && o.Contains(t) }

// Only is the subset of t whose fingerprints are in fps.
func (t Trust) Only(fps []string) Trust {
	var o Trust
	for i, c := range t.certs {
		if slices.Contains(fps, t.fps[i]) {
			o.add(c)
		}
	}
	return o
}

// Pool is t as an x509 pool.
func (t Trust) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range t.certs {
		p.AddCert(c)
	}
	return p
}

// PEM is t as a PEM bundle, in t's order.
func (t Trust) PEM() []byte {
	var out []byte
	for _, c := range t.certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// Signs reports whether a CA of t signed the PEM certificate certPEM (its first block).
func (t Trust) Signs(certPEM []byte) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	for _, ca := range t.certs {
		if leaf.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// IssuerAnnotation is the value of AnnotationIssuerCAs for certificates issued under t.
func (t Trust) IssuerAnnotation() string { return strings.Join(t.fps, ",") }

// IssuersOf is the CAs a certificate Secret's certificate was issued with: those of its CA file
// (caPEM) that AnnotationIssuerCAs (annotation) names, or all of them when it names none of them.
func IssuersOf(caPEM []byte, annotation string) Trust {
	all := ParseTrust(caPEM)
	if annotation == "" {
		return all
	}
	if only := all.Only(strings.Split(annotation, ",")); !only.Empty() {
		return only
	}
	return all
}

// CertState is one certificate Secret of a cluster as a pass finds it, and whether the pass has
// a new certificate for it.
type CertState struct {
	// Present: the Secret exists.
	Present bool
	// Trust is its CA file; Issuers the CAs its certificate came with (IssuersOf).
	Trust, Issuers Trust
	// Next: the pass has a new certificate for it (a renewal, or one under a new CA), which
	// came with NextIssuers.
	Next        bool
	NextIssuers Trust
}

// TrustPlan is what a pass writes into a cluster's certificate Secrets.
type TrustPlan struct {
	// Step is the CA rotation step under way ("" for none).
	Step etcdv1beta2.CARotationStep
	// Trust is the CA file every Secret gets.
	Trust Trust
	// WriteNext: the new certificates are written (missing Secrets are always written).
	WriteNext bool
	// Gate: the new certificates come with a CA the members did not trust when they started
	// with the current ones: they may be written only once every member accepts a certificate
	// of that CA (Step Trusting until then, Issuing after).
	Gate bool
	// Retire: Trust drops CAs no certificate comes with any more, which may be written only
	// once every member serves the certificates now in the Secrets.
	Retire bool
}

// PlanTrust decides the CA file and certificates of a cluster's certificate Secrets, so that a
// member never meets a certificate its CA file did not hold when it started (etcd loads its
// trusted CAs at start only; certificates it reads again at each connection):
//   - a CA that a certificate to be written comes with, and that the CA files lack, is added to
//     them first, the certificates left as they are (Trusting: the members are then rolled,
//     see TLSStatus);
//   - then the certificates are written (Gate when one comes with a CA no current certificate
//     came with);
//   - then the CAs no certificate comes with leave the CA files (Retiring).
//
// A cluster none of whose Secrets exist gets its certificates and their CAs at once.
func PlanTrust(states []CertState) TrustPlan {
	var trust, issued, wanted Trust
	next := false
	for _, s := range states {
		if s.Present {
			trust, issued = trust.Union(s.Trust), issued.Union(s.Issuers)
		}
		switch {
		case s.Next:
			wanted, next = wanted.Union(s.NextIssuers), true
		case s.Present:
			wanted = wanted.Union(s.Issuers)
		}
	}
	needed := issued.Union(wanted)
	switch {
	case trust.Empty():
		return TrustPlan{Trust: wanted, WriteNext: true}
	case !trust.Contains(needed):
		return TrustPlan{Step: etcdv1beta2.CARotationTrusting, Trust: trust.Union(needed)}
	case next:
		p := TrustPlan{Trust: trust, WriteNext: true, Gate: !issued.Contains(wanted)}
		if !trust.Equal(wanted) {
			p.Step = etcdv1beta2.CARotationIssuing
		}
		return p
	case !issued.Contains(trust):
		return TrustPlan{Step: etcdv1beta2.CARotationRetiring, Trust: issued, Retire: true}
	}
	return TrustPlan{Trust: trust}
}

// CARotationDue says why the operator's CA ca must give way to a new one, or "" when it need
// not: the user asked (asked, the value of etcdv1beta2.AnnotationRotateCA, differs from done,
// the one last acted on), or it expires within CARenewBefore of now. A rotation starts only while
// the CA files (trusted) hold exactly ca: never during one under way.
func CARotationDue(ca *x509.Certificate, trusted Trust, asked, done string, now time.Time) string {
	switch {
	case trusted.Len() != 1 || trusted.fps[0] != Fingerprint(ca):
		return ""
	case asked != "" && asked != done:
		return fmt.Sprintf("asked for (%s=%s)", etcdv1beta2.AnnotationRotateCA, asked)
	case !now.Before(ca.NotAfter.Add(-CARenewBefore)):
		return "it expires at " + ca.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}
