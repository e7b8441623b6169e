package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/certs"
	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// reconcileTLS keeps the certificates of a TLS.auto cluster in the Secrets its member pods
// mount, before any pod mounts them: signed by the operator's CA (signedCerts), or issued by
// cert-manager with an issuerRef (issuedCerts); writeCerts decides what is written and when,
// so that a new CA reaches the members without lock-out. A certificate is issued again when it
// is missing, was signed by another CA, names other hosts, or is inside its renewal window.
// Renewing rewrites the Secret in place; the kubelet updates the mounted files and etcd reads
// them at its next connection, so members keep serving with no restart. Secrets of those
// names the cluster does not control are never touched: NotOwned. The duration is how soon
// the pass should look again (a CA rotation under way).
func (r *Reconciler) reconcileTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster) (time.Duration, error) {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		c.Status.TLS = nil
		return 0, nil
	}
	secrets, err := r.certSecrets(ctx, c)
	if err != nil {
		return 0, err
	}
	if ref := c.Spec.TLS.Auto.IssuerRef; ref != nil {
		if err := clusterpki.IssuerAllowed(ref, r.Options.AllowedIssuerKinds); err != nil {
			return 0, err
		}
		err = r.issuedCerts(ctx, c, secrets)
	} else {
		err = r.signedCerts(ctx, c, secrets)
	}
	if err != nil {
		return 0, err
	}
	return r.writeCerts(ctx, c, secrets)
}

// signedCerts issues, under the cluster's CA, the certificates that need it.
func (r *Reconciler) signedCerts(ctx context.Context, c *etcdv1beta2.EtcdCluster, secrets []*certSecret) error {
	now := r.Clock.Now()
	validity, renewBefore := clusterpki.Durations(c.Spec.TLS.Auto)
	ca, err := r.ensureCA(ctx, c, now, secrets)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		why := "missing"
		if s.secret != nil {
			why = ca.Stale(s.secret.Data[s.ac.CertKey], s.secret.Data[s.ac.KeyKey], s.ac.Leaf, now, renewBefore)
		}
		if why == "" {
			continue
		}
		crt, key, err := ca.Issue(s.ac.Leaf, now, validity)
		if err != nil {
			return err
		}
		s.next(crt, key, clusterpki.ParseTrust(ca.CertPEM), fmt.Sprintf("issued again (%s)", why))
	}
	return nil
}

// ensureCA returns the cluster's CA, made and stored on first use. A new one replaces it when
// the user asks (etcdv1beta2.AnnotationRotateCA) or it is within clusterpki.CARenewBefore of
// its expiry, and only while the members' CA files hold exactly it (no rotation under way);
// the CA files keep the old one until writeCerts retires it. A missing CA Secret is made anew
// the same way: members keep trusting the CA in their CA files until they trust the new one
// too. A CA Secret that does not parse is not replaced (every certificate depends on it):
// InvalidSpec, for a person to look at.
func (r *Reconciler) ensureCA(ctx context.Context, c *etcdv1beta2.EtcdCluster, now time.Time, secrets []*certSecret) (*certs.CA, error) {
	name := c.Name + etcdv1beta2.AutoTLSCASuffix
	s, err := r.ownedSecret(ctx, c, name)
	if err != nil {
		return nil, err
	}
	asked := c.Annotations[etcdv1beta2.AnnotationRotateCA]
	var why string
	if s != nil {
		tlsStatus(c).LastCARotationRequest = s.Annotations[etcdv1beta2.AnnotationRotateCA]
		ca, err := certs.ParseCA(s.Data[clusterpki.CACertKey], s.Data[clusterpki.CAKeyKey])
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "TLS.auto: the CA in secret %s does not parse (%v): delete the secret and the cluster moves to a new CA", name, err)
		}
		if why = clusterpki.CARotationDue(ca.Cert, trustOf(secrets), asked, s.Annotations[etcdv1beta2.AnnotationRotateCA], now); why == "" {
			return ca, nil
		}
	} else if !trustOf(secrets).Empty() {
		why = "its secret " + name + " was missing"
	}
	ca, err := clusterpki.NewCA(c, now)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{clusterpki.CACertKey: ca.CertPEM, clusterpki.CAKeyKey: ca.KeyPEM}
	if err := r.writeSecret(ctx, c, name, s, data, map[string]string{etcdv1beta2.AnnotationRotateCA: asked}); err != nil {
		return nil, err
	}
	tlsStatus(c).LastCARotationRequest = asked
	if why == "" {
		r.event(c, corev1.EventTypeNormal, "CertificatesCreated", fmt.Sprintf("TLS.auto: CA in secret %s, valid until %s", name, ca.Cert.NotAfter.UTC().Format(time.RFC3339)))
	} else {
		r.event(c, corev1.EventTypeNormal, "CARotationStarted", fmt.Sprintf("TLS.auto: a new CA in secret %s, valid until %s, because %s; the members keep trusting the old one until each trusts both (status.TLS.caRotation)",
			name, ca.Cert.NotAfter.UTC().Format(time.RFC3339), why))
	}
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

// writeSecret creates Secret name controlled by c with data and annotations, or replaces the
// data of existing and sets those annotations on it (optimistic lock: a concurrent change
// makes the pass retry).
func (r *Reconciler) writeSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, existing *corev1.Secret, data map[string][]byte, annotations map[string]string) error {
	if existing != nil {
		existing.Data = data
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&existing.ObjectMeta, k, v)
		}
		if err := r.Update(ctx, existing); err != nil {
			return fmt.Errorf("updating secret %s of %s: %w", name, klog.KObj(c), err)
		}
		return nil
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: member.SelectorLabels(c), Annotations: annotations}, Data: data}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme()); err != nil {
		return fmt.Errorf("owning secret %s: %w", name, err)
	}
	return r.createOwned(ctx, c, s, &corev1.Secret{}, "Secret")
}

// tlsStatus is c's status.TLS, made when it is not there.
func tlsStatus(c *etcdv1beta2.EtcdCluster) *etcdv1beta2.TLSStatus {
	if c.Status.TLS == nil {
		c.Status.TLS = &etcdv1beta2.TLSStatus{}
	}
	return c.Status.TLS
}
