package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// certificateCRD is cert-manager's Certificate kind without its schema: enough for the API
// server to store what the operator writes. The e2e test meets the real cert-manager.
func certificateCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "certificates.cert-manager.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cert-manager.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "certificates", Singular: "certificate", Kind: "Certificate", ListKind: "CertificateList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func getCertificate(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	crt := &unstructured.Unstructured{}
	crt.SetGroupVersionKind(clusterpki.CertificateGVK)
	return crt, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, crt)
}

// waitDegraded waits until cluster name of ns is Degraded with reason and a message containing
// msg.
func waitDegraded(t *testing.T, ns, name, why, msg string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "Degraded "+why, testutil.NoError(func() error {
		cond := meta.FindStatusCondition(getCluster(t, ns, name).Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != why || !strings.Contains(cond.Message, msg) {
			return fmt.Errorf("Degraded %+v", cond)
		}
		return nil
	}))
}

// issue plays cert-manager: it writes a certificate of ca for ac into ac's issued Secret.
func issue(t *testing.T, ns string, ca *certs.CA, ac clusterpki.Cert) {
	t.Helper()
	crt, key, err := ca.Issue(ac.Leaf, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, ns, ac.Secret+clusterpki.IssuedSecretSuffix)
	s.Data = map[string][]byte{clusterpki.IssuedCertKey: crt, clusterpki.IssuedKeyKey: key, clusterpki.IssuedCAKey: ca.CertPEM}
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestIssuedTLS: a TLS.auto cluster with an issuerRef waits, with reason
// CertManagerNotInstalled and a Warning, while cert-manager is not installed; once it is, the
// operator creates the three Certificates (controlled by the cluster, the names, usages and
// issuer of the spec) and their empty target Secrets (controlled by the cluster, so they go with
// it), creates no member until all three are issued, then copies them into the Secrets the
// members mount and reaches etcd over TLS. A renewal by cert-manager is copied; a Certificate
// changed by hand is put back; a certificate of another CA starts a CA rotation (its CA joins
// the CA files, the members are rolled) and is not copied before every member accepts it.
// cert-manager's part is played by the test (the e2e TestCertManagerTLS runs the real one).
func TestIssuedTLS(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "issuedtls")
	c := newCluster(ns, "c", 1)
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{IssuerRef: &etcdv1beta2.CertManagerIssuerRef{Name: "ca-issuer"}}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitDegraded(t, ns, "c", etcdv1beta2.ReasonCertManagerNotInstalled, "install cert-manager")
	testutil.Eventually(t, testutil.Timeout, "one Warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonCertManagerNotInstalled, 1)
	}))
	if pods := podNames(t, ns); len(pods) != 0 {
		t.Fatalf("member pods %v created without certificates", pods)
	}

	crd := certificateCRD()
	if err := k8s.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteCRD(t, crd) })
	touch(t, ns)
	c = getCluster(t, ns, "c")
	acs := clusterpki.Certs(c)
	waitDegraded(t, ns, "c", etcdv1beta2.ReasonCertificateNotReady, "waiting for cert-manager to issue c-peer-tls")
	for _, ac := range acs {
		crt, err := getCertificate(ctx, ns, ac.Secret)
		if err != nil {
			t.Fatalf("certificate %s: %v", ac.Secret, err)
		}
		if !controlledBy(crt, c) {
			t.Fatalf("certificate %s is not controlled by the cluster: %v", ac.Secret, crt.GetOwnerReferences())
		}
		spec, _, _ := unstructured.NestedMap(crt.Object, "spec")
		issuer, _, _ := unstructured.NestedStringMap(spec, "issuerRef")
		dnsNames, _, _ := unstructured.NestedStringSlice(spec, "dnsNames")
		usages, _, _ := unstructured.NestedStringSlice(spec, "usages")
		if spec["secretName"] != ac.Secret+"-issued" || issuer["name"] != "ca-issuer" || issuer["kind"] != "Issuer" || issuer["group"] != "cert-manager.io" ||
			!slices.Equal(dnsNames, ac.Leaf.DNSNames) || slices.Contains(usages, "server auth") != ac.Leaf.Server || !slices.Contains(usages, "client auth") {
			t.Fatalf("certificate %s: spec %v", ac.Secret, spec)
		}
		target := getSecret(t, ns, ac.Secret+"-issued")
		byCert := slices.ContainsFunc(target.OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.UID == crt.GetUID() && o.Kind == "Certificate" && (o.Controller == nil || !*o.Controller)
		})
		if !controlledBy(target, c) || !byCert || target.Type != corev1.SecretTypeTLS {
			t.Fatalf("secret %s: type %s, owners %v: want controlled by the cluster and owned by its Certificate too (it must outlive the Certificate, or cert-manager writes it again with no owner)",
				target.Name, target.Type, target.OwnerReferences)
		}
	}
	if pods := podNames(t, ns); len(pods) != 0 {
		t.Fatalf("member pods %v created before the certificates were issued", pods)
	}

	// cert-manager issues two of three: still nothing copied, no member.
	ca, err := certs.NewCA("issuer CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue(t, ns, ca, acs[0])
	issue(t, ns, ca, acs[1])
	touch(t, ns)
	waitDegraded(t, ns, "c", etcdv1beta2.ReasonCertificateNotReady, "waiting for cert-manager to issue c-operator-tls")
	for _, name := range []string{"c-peer-tls", "c-server-tls"} {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("secret %s written before all three certificates were issued: %v", name, err)
		}
	}

	// The third: copied into the members' Secrets, the member runs, the operator dials https.
	issue(t, ns, ca, acs[2])
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 1)
	for _, ac := range acs {
		issued, copied := getSecret(t, ns, ac.Secret+"-issued"), getSecret(t, ns, ac.Secret)
		if string(copied.Data[ac.CertKey]) != string(issued.Data["tls.crt"]) || string(copied.Data[ac.KeyKey]) != string(issued.Data["tls.key"]) ||
			string(copied.Data[ac.CAKey]) != string(ca.CertPEM) || !controlledBy(copied, c) {
			t.Fatalf("secret %s is not the copy of %s-issued", ac.Secret, ac.Secret)
		}
	}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c-ca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator made a CA of its own: %v", err)
	}
	withCert := false
	f.set(func(f *fakeEtcd) { withCert = f.access.TLS != nil })
	if dialed := f.dialedURLs(); !withCert || !slices.Contains(dialed, "https://c-0.c."+ns+".svc:2379") {
		t.Fatalf("the operator dialed %v, with its client certificate: %v", dialed, withCert)
	}

	// cert-manager renews the server certificate: copied.
	oldServer := getSecret(t, ns, "c-server-tls").Data["server.crt"]
	issue(t, ns, ca, acs[1])
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "renewed server certificate copied", testutil.NoError(func() error {
		got := getSecret(t, ns, "c-server-tls").Data["server.crt"]
		if string(got) == string(oldServer) || string(got) != string(getSecret(t, ns, "c-server-tls-issued").Data["tls.crt"]) {
			return fmt.Errorf("server.crt not the renewed certificate")
		}
		return nil
	}))

	// A Certificate changed by hand: its names put back.
	crt, err := getCertificate(ctx, ns, "c-server-tls")
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(crt.Object, []string{"elsewhere.example"}, "spec", "dnsNames"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(ctx, crt); err != nil {
		t.Fatal(err)
	}
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "Certificate names put back", testutil.NoError(func() error {
		crt, err := getCertificate(ctx, ns, "c-server-tls")
		if err != nil {
			return err
		}
		got, _, _ := unstructured.NestedStringSlice(crt.Object, "spec", "dnsNames")
		if !slices.Equal(got, acs[1].Leaf.DNSNames) {
			return fmt.Errorf("dnsNames %v", got)
		}
		return nil
	}))
	waitConverged(t, ns, f, 1)

	// A peer certificate of another CA (the issuer's CA changed): the CA files gain that CA
	// beside the old one and the certificate is held back until every member accepts it (here
	// never: a one-member cluster cannot be rolled, and no real member answers the check).
	other, err := certs.NewCA("another CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	peer := getSecret(t, ns, "c-peer-tls").Data["peer.crt"]
	issue(t, ns, other, acs[0])
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "both CAs in every CA file, rotation Trusting", testutil.NoError(func() error {
		for _, ac := range acs {
			if got := clusterpki.ParseTrust(getSecret(t, ns, ac.Secret).Data[ac.CAKey]); got.Len() != 2 || !got.Contains(clusterpki.ParseTrust(other.CertPEM, ca.CertPEM)) {
				return fmt.Errorf("%s holds %d CAs", ac.Secret, got.Len())
			}
		}
		cur := getCluster(t, ns, "c")
		if cur.Status.TLS == nil || cur.Status.TLS.CARotation != etcdv1beta2.CARotationTrusting || len(cur.Status.TLS.TrustedCAs) != 2 || len(cur.Status.Members.Outdated) != 1 {
			return fmt.Errorf("status.TLS %+v, outdated %v", cur.Status.TLS, cur.Status.Members.Outdated)
		}
		return nil
	}))
	if got := getSecret(t, ns, "c-peer-tls").Data["peer.crt"]; string(got) != string(peer) {
		t.Fatal("a peer certificate of another CA was copied before the members trusted it")
	}
}

// deleteCRD deletes crd and waits until the API server no longer serves it.
func deleteCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	ctx := context.Background()
	if err := k8s.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
		return
	}
	testutil.Eventually(t, testutil.Timeout, "CRD "+crd.Name+" gone", testutil.NoError(func() error {
		err := k8s.Get(ctx, types.NamespacedName{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	}))
}

// TestSharedIssuerNeedsTheAdministrator (issue 30 item 2): a ClusterIssuer (or an external
// issuer kind, which may be cluster-wide) signs a cluster's member names for whoever may request
// a Certificate from it, so it is refused unless the etcd operator's --allowed-issuer-kinds
// lists its kind: Degraded IssuerNotAllowed, no Certificate, no pod. Which kinds are allowed:
// clusterpki.TestIssuerAllowed.
func TestSharedIssuerNeedsTheAdministrator(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "clusterissuer")
	c := newCluster(ns, "c", 1)
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{IssuerRef: &etcdv1beta2.CertManagerIssuerRef{Name: "shared", Kind: "ClusterIssuer"}}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitDegraded(t, ns, "c", etcdv1beta2.ReasonIssuerNotAllowed, "--allowed-issuer-kinds")
	if pods := podNames(t, ns); len(pods) != 0 {
		t.Fatalf("member pods %v created", pods)
	}
}
