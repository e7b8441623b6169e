package clusterpki

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func autoCluster(auto *etcdv1beta2.AutoTLS) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec:       etcdv1beta2.ClusterSpec{TLS: &etcdv1beta2.TLSPolicy{Auto: auto}},
	}
}

// TestCerts: a CA of the cluster issues each certificate so that it verifies for the names the
// members and clients dial (with and without the cluster domain) and for its usage, and under
// the Secret names and keys the members and the operator read.
func TestCerts(t *testing.T) {
	c := autoCluster(&etcdv1beta2.AutoTLS{})
	c.Spec.Pod = &etcdv1beta2.PodPolicy{ClusterDomain: ".example.org"}
	now := time.Now()
	ca, err := NewCA(c, now)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Cert.Subject.CommonName != "etcd-operator CA of ns/c" || ca.Cert.NotAfter.Before(now.Add(9*365*24*time.Hour)) {
		t.Fatalf("CA %q valid until %s", ca.Cert.Subject.CommonName, ca.Cert.NotAfter)
	}
	cs := Certs(c)
	if got := Names(cs); !slices.Equal(got, []string{"c-peer-tls", "c-server-tls", "c-operator-tls"}) {
		t.Fatalf("secrets %v", got)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, tc := range []struct {
		cert  int
		name  string
		usage x509.ExtKeyUsage
	}{
		{0, "c-0.c.ns.svc", x509.ExtKeyUsageServerAuth},
		{0, "c-0.c.ns.svc.example.org", x509.ExtKeyUsageClientAuth},
		{1, "c-0.c.ns.svc", x509.ExtKeyUsageServerAuth},
		{1, "c-client.ns.svc.example.org", x509.ExtKeyUsageServerAuth},
		{1, "c-client", x509.ExtKeyUsageServerAuth},
		{1, "localhost", x509.ExtKeyUsageServerAuth},
		{1, "127.0.0.1", x509.ExtKeyUsageServerAuth},
		{2, "", x509.ExtKeyUsageClientAuth},
	} {
		crt, _, err := ca.Issue(cs[tc.cert].Leaf, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(crt)
		if block == nil {
			t.Fatal("no PEM certificate")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.name, KeyUsages: []x509.ExtKeyUsage{tc.usage}, CurrentTime: now}); err != nil {
			t.Errorf("%s for %q: %v", cs[tc.cert].Secret, tc.name, err)
		}
	}
	if op := cs[2]; op.CertKey != etcdv1beta2.ClientTLSCertKey || op.KeyKey != etcdv1beta2.ClientTLSKeyKey || op.CAKey != etcdv1beta2.ClientTLSCAKey ||
		op.Leaf.CommonName != "etcd-operator" || op.Leaf.Server {
		t.Errorf("operator certificate %+v", op)
	}
}

// TestDurations: 90 days by default, renewed in the last third, never later than five minutes
// before expiry.
func TestDurations(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, tc := range []struct {
		auto               etcdv1beta2.AutoTLS
		validity, renewing time.Duration
	}{
		{etcdv1beta2.AutoTLS{}, 90 * 24 * time.Hour, 30 * 24 * time.Hour},
		{etcdv1beta2.AutoTLS{Validity: d(time.Hour)}, time.Hour, 20 * time.Minute},
		{etcdv1beta2.AutoTLS{Validity: d(6 * time.Minute)}, 6 * time.Minute, 5 * time.Minute},
		{etcdv1beta2.AutoTLS{Validity: d(time.Hour), RenewBefore: d(30 * time.Minute)}, time.Hour, 30 * time.Minute},
		{etcdv1beta2.AutoTLS{Validity: d(time.Hour), RenewBefore: d(time.Minute)}, time.Hour, 5 * time.Minute},
	} {
		if v, r := Durations(&tc.auto); v != tc.validity || r != tc.renewing {
			t.Errorf("%+v: validity %s, renew before %s; want %s, %s", tc.auto, v, r, tc.validity, tc.renewing)
		}
	}
}

// TestIssuerAllowed (issue 30 item 2): an Issuer of cert-manager's group is allowed; a
// ClusterIssuer or an external issuer kind only when --allowed-issuer-kinds lists its
// group/kind.
func TestIssuerAllowed(t *testing.T) {
	for _, tc := range []struct {
		ref     etcdv1beta2.CertManagerIssuerRef
		allowed []string
		ok      bool
	}{
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca"}, nil, true},
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "Issuer", Group: "cert-manager.io"}, nil, true},
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "ClusterIssuer"}, nil, false},
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "ClusterIssuer"}, []string{"cert-manager.io/ClusterIssuer"}, true},
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "Issuer", Group: "awspca.cert-manager.io"}, []string{"cert-manager.io/ClusterIssuer"}, false},
		{etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}, []string{"awspca.cert-manager.io/AWSPCAClusterIssuer"}, true},
	} {
		if err := IssuerAllowed(&tc.ref, tc.allowed); (err == nil) != tc.ok {
			t.Errorf("%+v with %v allowed: %v, want allowed %v", tc.ref, tc.allowed, err, tc.ok)
		}
	}
}

// TestCertificateSpec: the Certificate asks the spec's issuer for the certificate's names,
// addresses and usages, into the issued Secret, with the spec's durations.
func TestCertificateSpec(t *testing.T) {
	c := autoCluster(&etcdv1beta2.AutoTLS{Validity: &metav1.Duration{Duration: time.Hour},
		IssuerRef: &etcdv1beta2.CertManagerIssuerRef{Name: "ca-issuer"}})
	cs := Certs(c)
	server := CertificateSpec(c, cs[1])
	crt := &unstructured.Unstructured{Object: map[string]any{"spec": server}}
	dnsNames, _, _ := unstructured.NestedStringSlice(crt.Object, "spec", "dnsNames")
	ips, _, _ := unstructured.NestedStringSlice(crt.Object, "spec", "ipAddresses")
	usages, _, _ := unstructured.NestedSlice(crt.Object, "spec", "usages")
	issuer, _, _ := unstructured.NestedStringMap(crt.Object, "spec", "issuerRef")
	if server["secretName"] != "c-server-tls-issued" || server["commonName"] != "c server" || server["duration"] != "1h0m0s" || server["renewBefore"] != "20m0s" ||
		!slices.Equal(dnsNames, cs[1].Leaf.DNSNames) || !slices.Equal(ips, []string{"127.0.0.1"}) ||
		!slices.Equal(usages, []any{"digital signature", "key encipherment", "server auth", "client auth"}) || issuer["name"] != "ca-issuer" {
		t.Fatalf("server Certificate spec %v", server)
	}
	operator := CertificateSpec(c, cs[2])
	if got := operator["dnsNames"]; !slices.Equal(got.([]any), []any{"c-client.ns.svc"}) {
		t.Errorf("operator Certificate names %v, want the cluster's client identity alone (the members pin their clients to it)", got)
	}
	if _, ok := operator["ipAddresses"]; ok {
		t.Errorf("operator Certificate names addresses: %v", operator)
	}
	if got := operator["usages"]; !slices.Equal(got.([]any), []any{"digital signature", "key encipherment", "client auth"}) {
		t.Errorf("operator Certificate usages %v", got)
	}
}

// TestCertificateSays: only a Ready condition that is not True is reported.
func TestCertificateSays(t *testing.T) {
	with := func(conds ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
	}
	for _, tc := range []struct {
		crt  *unstructured.Unstructured
		want string
	}{
		{&unstructured.Unstructured{Object: map[string]any{}}, ""},
		{with(map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}), ""},
		{with(map[string]any{"type": "Issuing", "status": "True", "reason": "x"}), ""},
		{with(map[string]any{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuer ca-issuer not found"}),
			", cert-manager: DoesNotExist: Issuer ca-issuer not found"},
	} {
		if got := CertificateSays(tc.crt); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.crt.Object, got, tc.want)
		}
	}
}
