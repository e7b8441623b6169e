package clusterpki

import (
	"slices"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func testCA(t *testing.T) (*certs.CA, Trust) {
	t.Helper()
	ca, err := certs.NewCA("test CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, ParseTrust(ca.CertPEM)
}

// TestTrust: bundles parse into sets of CA certificates without duplicates; the PEM of a set
// parses back to it; a set signs what one of its CAs issued; IssuersOf reads the annotation.
func TestTrust(t *testing.T) {
	caA, a := testCA(t)
	_, b := testCA(t)
	ab := ParseTrust(append(append([]byte{}, caA.CertPEM...), b.PEM()...), caA.CertPEM, []byte("not PEM"))
	if ab.Len() != 2 || !ab.Contains(a) || !ab.Contains(b) || a.Contains(ab) || !ab.Equal(b.Union(a)) {
		t.Fatalf("bundle of a and b: %v", ab.Fingerprints())
	}
	if !ParseTrust(ab.PEM()).Equal(ab) || ab.Only(b.Fingerprints()).Fingerprints()[0] != b.Fingerprints()[0] {
		t.Fatal("PEM or Only lost a certificate")
	}
	leaf, _, err := caA.Issue(certs.Leaf{CommonName: "x", Client: true}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Signs(leaf) || b.Signs(leaf) || !ab.Signs(leaf) {
		t.Fatal("Signs: want a and a+b to sign the leaf, b not")
	}
	if got := IssuersOf(ab.PEM(), b.IssuerAnnotation()); !got.Equal(b) {
		t.Fatalf("IssuersOf with the annotation naming b: %v", got.Fingerprints())
	}
	if got := IssuersOf(ab.PEM(), ""); !got.Equal(ab) {
		t.Fatalf("IssuersOf without the annotation: %v, want every CA of the file", got.Fingerprints())
	}
}

// TestPlanTrustRotation walks a rotation from CA a to CA b through PlanTrust, writing what each
// plan says: the CA files gain b with the certificates untouched; the certificates under b are
// written only through the gate; a renewal under a trusted CA needs no gate; the CA files drop
// a only once no certificate comes with it, through the retire check; then all is steady. At no
// step is a certificate written whose CA the plan's CA file lacks.
func TestPlanTrustRotation(t *testing.T) {
	_, a := testCA(t)
	_, b := testCA(t)
	steady := func(n int, issuers Trust) []CertState {
		var out []CertState
		for range n {
			out = append(out, CertState{Present: true, Trust: issuers, Issuers: issuers})
		}
		return out
	}
	type want struct {
		step            etcdv1beta2.CARotationStep
		trust           Trust
		writeNext, gate bool
		retire          bool
	}
	check := func(name string, p TrustPlan, w want) {
		t.Helper()
		if p.Step != w.step || !p.Trust.Equal(w.trust) || p.WriteNext != w.writeNext || p.Gate != w.gate || p.Retire != w.retire {
			t.Errorf("%s: plan {step %q trust %d write %t gate %t retire %t}, want {%q %d %t %t %t}", name, p.Step, p.Trust.Len(), p.WriteNext, p.Gate, p.Retire,
				w.step, w.trust.Len(), w.writeNext, w.gate, w.retire)
		}
	}
	ab := a.Union(b)

	// A new cluster: everything at once.
	check("new cluster", PlanTrust([]CertState{{Next: true, NextIssuers: a}, {Next: true, NextIssuers: a}}), want{trust: a, writeNext: true})
	// Steady, and a renewal under the CA the members trust: no step, no gate.
	check("steady", PlanTrust(steady(3, a)), want{trust: a})
	renew := steady(3, a)
	renew[1].Next, renew[1].NextIssuers = true, a
	check("renewal", PlanTrust(renew), want{trust: a, writeNext: true})

	// New certificates under b: first the CA files gain b, nothing else.
	s := steady(3, a)
	for i := range s {
		s[i].Next, s[i].NextIssuers = true, b
	}
	check("rotation starts", PlanTrust(s), want{step: etcdv1beta2.CARotationTrusting, trust: ab})
	// The CA files hold both: the certificates under b, through the gate.
	for i := range s {
		s[i].Trust = ab
	}
	check("trusted", PlanTrust(s), want{step: etcdv1beta2.CARotationIssuing, trust: ab, writeNext: true, gate: true})
	// One written (a pass that stopped half way): the rest need no gate any more.
	s[0].Issuers, s[0].Next = b, false
	check("half issued", PlanTrust(s), want{step: etcdv1beta2.CARotationIssuing, trust: ab, writeNext: true})
	// All written: a leaves the CA files, through the retire check.
	for i := range s {
		s[i].Issuers, s[i].Next = b, false
	}
	check("issued", PlanTrust(s), want{step: etcdv1beta2.CARotationRetiring, trust: b, retire: true})
	for i := range s {
		s[i].Trust = b
	}
	check("rotated", PlanTrust(s), want{trust: b})

	// A CA file with a CA no certificate came with (edited by hand) is retired the same way.
	extra := steady(3, b)
	extra[2].Trust = ab
	check("extra CA", PlanTrust(extra), want{step: etcdv1beta2.CARotationRetiring, trust: b, retire: true})
	// A missing Secret during a rotation is written with the CA file the others get.
	missing := steady(3, a)
	missing[2] = CertState{Next: true, NextIssuers: b}
	if p := PlanTrust(missing); p.Step != etcdv1beta2.CARotationTrusting || !p.Trust.Equal(ab) {
		t.Errorf("missing secret under b: step %q trust %d", p.Step, p.Trust.Len())
	}
	if got := slices.Concat(a.Fingerprints(), b.Fingerprints()); !slices.Equal(ab.Fingerprints(), got) {
		t.Errorf("Union order %v, want a then b", ab.Fingerprints())
	}
}

// TestCARotationDue: the operator's CA gives way when asked for once per new value, or within
// CARenewBefore of its expiry, and never while a rotation is under way.
func TestCARotationDue(t *testing.T) {
	now := time.Now()
	long, err := certs.NewCA("long", now, 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	short, err := certs.NewCA("short", now, CARenewBefore-time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, other := testCA(t)
	onlyLong, onlyShort := ParseTrust(long.CertPEM), ParseTrust(short.CertPEM)
	for _, tc := range []struct {
		name        string
		ca          *certs.CA
		trusted     Trust
		asked, done string
		want        bool
	}{
		{"steady", long, onlyLong, "", "", false},
		{"asked", long, onlyLong, "1", "", true},
		{"asked again, same value", long, onlyLong, "1", "1", false},
		{"asked anew", long, onlyLong, "2", "1", true},
		{"expiring", short, onlyShort, "", "", true},
		{"expiring, rotation under way", short, onlyShort.Union(other), "", "", false},
		{"asked, CA files of another CA", long, other, "1", "", false},
	} {
		if got := CARotationDue(tc.ca.Cert, tc.trusted, tc.asked, tc.done, now); (got != "") != tc.want {
			t.Errorf("%s: %q, want due %t", tc.name, got, tc.want)
		}
	}
}
