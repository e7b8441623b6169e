package etcdcluster

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TLS.auto with an issuerRef: cert-manager issues the certificates. The operator creates one
// cert-manager Certificate per certificate of clusterpki.Certs (same names, usages and
// durations as its own CA would use) and, once cert-manager has issued all three, copies each
// into the Secret and keys every consumer already reads (member pods, the operators' client,
// backups, restores); a certificate under a CA the members do not trust yet is copied only
// after they do (tls_trust.go). The Certificates are read and written unstructured:
// the operator does not depend on cert-manager's Go module, and runs without cert-manager
// installed.

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update

// requeueCertificates is how soon a cluster waiting on cert-manager looks again: issuing takes
// cert-manager a second or two, and no watch reports it (the operator does not watch Secrets,
// and watching Certificates would need cert-manager installed before the operator starts).
const requeueCertificates = 3 * time.Second

// issuedCerts makes sure the three Certificates exist as the spec wants them, then takes what
// cert-manager issued as the certificates to copy into the members' Secrets (writeCerts decides
// when). Nothing is taken until all three are issued and valid for their names and usages. A
// renewal by cert-manager is copied the same way; one under another CA (the issuer's CA
// changed) is copied only once every member trusts that CA too (writeCerts).
func (r *Reconciler) issuedCerts(ctx context.Context, c *etcdv1beta2.EtcdCluster, secrets []*certSecret) error {
	now := r.Clock.Now()
	var waiting []string
	for _, cs := range secrets {
		crt, err := r.ensureCertificate(ctx, c, cs.ac)
		if err != nil {
			return err
		}
		issuedName := cs.ac.Secret + clusterpki.IssuedSecretSuffix
		s, err := r.ensureIssuedSecret(ctx, c, issuedName, crt)
		if err != nil {
			return err
		}
		cert, key, ca := s.Data[clusterpki.IssuedCertKey], s.Data[clusterpki.IssuedKeyKey], s.Data[clusterpki.IssuedCAKey]
		if why := certs.Check(cert, key, ca, cs.ac.Leaf, now); why != "" {
			waiting = append(waiting, fmt.Sprintf("%s (%s)%s", crt.GetName(), why, clusterpki.CertificateSays(crt)))
			continue
		}
		if cs.secret != nil && bytes.Equal(cs.secret.Data[cs.ac.CertKey], cert) && bytes.Equal(cs.secret.Data[cs.ac.KeyKey], key) {
			continue
		}
		cs.next(cert, key, clusterpki.ParseTrust(ca), "copied again from "+issuedName+", issued by cert-manager")
	}
	if len(waiting) > 0 {
		return reason.Errorf(etcdv1beta2.ReasonCertificateNotReady, "TLS.auto.issuerRef: waiting for cert-manager to issue %s", strings.Join(waiting, "; "))
	}
	return nil
}

// ensureCertificate creates the Certificate for ac, controlled by c, or brings the fields the
// operator sets back to the spec's values (fields cert-manager defaults are left alone). A
// Certificate of that name that c does not control is NotOwned; cert-manager not installed is
// CertManagerNotInstalled.
func (r *Reconciler) ensureCertificate(ctx context.Context, c *etcdv1beta2.EtcdCluster, ac clusterpki.Cert) (*unstructured.Unstructured, error) {
	want := clusterpki.CertificateSpec(c, ac)
	crt := &unstructured.Unstructured{}
	crt.SetGroupVersionKind(clusterpki.CertificateGVK)
	err := r.APIReader.Get(ctx, ctrlclient.ObjectKey{Namespace: c.Namespace, Name: ac.Secret}, crt)
	switch {
	case meta.IsNoMatchError(err):
		return nil, reason.Errorf(etcdv1beta2.ReasonCertManagerNotInstalled,
			"TLS.auto.issuerRef needs cert-manager, and the API server does not serve its Certificate kind (cert-manager.io/v1): install cert-manager, or remove issuerRef when creating the cluster to have the operator be the CA")
	case apierrors.IsNotFound(err):
		crt = &unstructured.Unstructured{Object: map[string]any{"spec": want}}
		crt.SetGroupVersionKind(clusterpki.CertificateGVK)
		crt.SetNamespace(c.Namespace)
		crt.SetName(ac.Secret)
		crt.SetLabels(member.SelectorLabels(c))
		if err := controllerutil.SetControllerReference(c, crt, r.Scheme()); err != nil {
			return nil, fmt.Errorf("owning certificate %s: %w", ac.Secret, err)
		}
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(clusterpki.CertificateGVK)
		if err := r.createOwned(ctx, c, crt, existing, "Certificate"); err != nil {
			return nil, err
		}
		r.event(c, corev1.EventTypeNormal, "CertificateRequested", fmt.Sprintf("cert-manager Certificate %s created for secret %s, issuer %s %s",
			ac.Secret, ac.Secret+clusterpki.IssuedSecretSuffix, c.Spec.TLS.Auto.IssuerRef.Kind, c.Spec.TLS.Auto.IssuerRef.Name))
		return crt, nil
	case err != nil:
		return nil, fmt.Errorf("getting certificate %s of %s: %w", ac.Secret, klog.KObj(c), err)
	case !controlledBy(crt, c):
		return nil, notOwned("Certificate", crt, c)
	}
	spec, _, _ := unstructured.NestedMap(crt.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	changed := false
	for k, v := range want {
		if !equality.Semantic.DeepEqual(spec[k], v) {
			spec[k], changed = v, true
		}
	}
	if !changed {
		return crt, nil
	}
	if err := unstructured.SetNestedMap(crt.Object, spec, "spec"); err != nil {
		return nil, fmt.Errorf("certificate %s: %w", ac.Secret, err)
	}
	if err := r.Update(ctx, crt); err != nil {
		return nil, fmt.Errorf("updating certificate %s of %s: %w", ac.Secret, klog.KObj(c), err)
	}
	return crt, nil
}

// ensureIssuedSecret returns the Secret cert-manager writes a certificate into, creating it
// empty first, controlled by c: cert-manager keeps the owner references when it writes the
// certificate, so the key goes with the cluster (cert-manager itself leaves a Certificate's
// Secret behind unless it runs with --enable-certificate-owner-ref). Its Certificate crt owns it
// too (not as controller): the garbage collector deletes an object only once all its owners are
// gone, so the Secret outlives its Certificate. Deleted before it, the Secret would be written
// again by cert-manager, with no owner, and stay behind the deleted cluster.
func (r *Reconciler) ensureIssuedSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, crt *unstructured.Unstructured) (*corev1.Secret, error) {
	byCert := metav1.OwnerReference{APIVersion: crt.GetAPIVersion(), Kind: crt.GetKind(), Name: crt.GetName(), UID: crt.GetUID()}
	s, err := r.ownedSecret(ctx, c, name)
	switch {
	case err != nil:
		return nil, err
	case s != nil:
		if crt.GetUID() == "" || slices.ContainsFunc(s.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == byCert.UID }) {
			return s, nil
		}
		// Made by an earlier release, or for a Certificate made again: owned by the current
		// one too (no owner of another Certificate is removed: it goes with that one).
		s.OwnerReferences = append(s.OwnerReferences, byCert)
		if err := r.Update(ctx, s); err != nil {
			return nil, fmt.Errorf("owning secret %s by certificate %s: %w", name, crt.GetName(), err)
		}
		return s, nil
	}
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: member.SelectorLabels(c)},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{clusterpki.IssuedCertKey: {}, clusterpki.IssuedKeyKey: {}}, // the type's required keys
	}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme()); err != nil {
		return nil, fmt.Errorf("owning secret %s: %w", name, err)
	}
	if crt.GetUID() != "" {
		s.OwnerReferences = append(s.OwnerReferences, byCert)
	}
	if err := r.createOwned(ctx, c, s, &corev1.Secret{}, "Secret"); err != nil {
		return nil, err
	}
	return s, nil
}
