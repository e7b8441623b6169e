package clusterpki

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TLS.auto with an issuerRef: cert-manager issues the certificates, one cert-manager
// Certificate per Cert (same names, usages and durations as the operator's own CA would use),
// into a Secret of its own (<secret>-issued) from which the controller copies it. Certificates
// are unstructured: the operator does not depend on cert-manager's Go module, and runs without
// cert-manager installed.

// CertificateGVK is cert-manager's Certificate.
var CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// Keys of a cert-manager Secret (kubernetes.io/tls, plus the CA).
const (
	// IssuedCertKey holds the issued certificate.
	IssuedCertKey = corev1.TLSCertKey
	// IssuedKeyKey holds its private key.
	IssuedKeyKey = corev1.TLSPrivateKeyKey
	// IssuedCAKey holds the certificate of the CA that issued it.
	IssuedCAKey = "ca.crt"
)

// IssuedSecretSuffix names the Secret cert-manager writes a certificate into, after the name of
// the Secret the members read (<cluster>-peer-tls-issued).
const IssuedSecretSuffix = "-issued"

// CertificateSpec is the spec of the cert-manager Certificate for cert of cluster c, whose
// TLS.auto has an issuerRef.
func CertificateSpec(c *etcdv1beta2.EtcdCluster, cert Cert) map[string]any {
	validity, renewBefore := Durations(c.Spec.TLS.Auto)
	ref := c.Spec.TLS.Auto.IssuerRef
	usages := []any{"digital signature", "key encipherment"}
	if cert.Leaf.Server {
		usages = append(usages, "server auth")
	}
	if cert.Leaf.Client {
		usages = append(usages, "client auth")
	}
	spec := map[string]any{
		"secretName": cert.Secret + IssuedSecretSuffix,
		// The operator's client certificate's common name is the etcd user it acts as when
		// etcd authentication is on, as with the operator's own CA.
		"commonName":  cert.Leaf.CommonName,
		"duration":    validity.String(),
		"renewBefore": renewBefore.String(),
		"usages":      usages,
		"privateKey":  map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		"issuerRef":   map[string]any{"name": ref.Name, "kind": ref.Kind, "group": ref.Group},
	}
	if len(cert.Leaf.DNSNames) > 0 {
		spec["dnsNames"] = toAny(cert.Leaf.DNSNames)
	}
	if len(cert.Leaf.IPs) > 0 {
		var ips []string
		for _, ip := range cert.Leaf.IPs {
			ips = append(ips, ip.String())
		}
		spec["ipAddresses"] = toAny(ips)
	}
	return spec
}

// CertificateSays is what cert-manager's Ready condition on crt says, when it says it is not
// ready: ", cert-manager: <reason>: <message>"; "" otherwise.
func CertificateSays(crt *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if !ok || cond["type"] != "Ready" || cond["status"] == "True" {
			continue
		}
		return fmt.Sprintf(", cert-manager: %v: %v", cond["reason"], cond["message"])
	}
	return ""
}

// toAny is ss as unstructured content (a []any of strings).
func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
