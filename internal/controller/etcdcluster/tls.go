package etcdcluster

import (
	"bytes"
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
		if err := clusterpki.IssuerAllowed(ref, r.Options.AllowedIssuerKinds); err != nil {
			return err
		}
		return r.reconcileIssuedTLS(ctx, c)
	}
	now := r.Clock.Now()
	validity, renewBefore := clusterpki.Durations(c.Spec.TLS.Auto)
	ca, err := r.ensureCA(ctx, c, now)
	if err != nil {
		return err
	}
	for _, ac := range clusterpki.Certs(c) {
		s, err := r.ownedSecret(ctx, c, ac.Secret)
		if err != nil {
			return err
		}
		why := "missing"
		if s != nil {
			why = ca.Stale(s.Data[ac.CertKey], s.Data[ac.KeyKey], ac.Leaf, now, renewBefore)
			if why == "" && !bytes.Equal(s.Data[ac.CAKey], ca.CertPEM) {
				why = "its CA file is not the cluster's CA"
			}
		}
		if why == "" {
			continue
		}
		crt, key, err := ca.Issue(ac.Leaf, now, validity)
		if err != nil {
			return err
		}
		data := map[string][]byte{ac.CertKey: crt, ac.KeyKey: key, ac.CAKey: ca.CertPEM}
		if err := r.writeSecret(ctx, c, ac.Secret, s, data); err != nil {
			return err
		}
		if s != nil {
			r.event(c, corev1.EventTypeNormal, "CertificateRenewed", fmt.Sprintf("certificate in secret %s issued again (%s); valid until %s", ac.Secret, why, certs.NotAfter(crt).UTC().Format(time.RFC3339)))
		}
	}
	return nil
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
		ca, err := certs.ParseCA(s.Data[clusterpki.CACertKey], s.Data[clusterpki.CAKeyKey])
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "TLS.auto: the CA in secret %s does not parse (%v): delete the secret and the cluster's certificates are made anew", name, err)
		}
		return ca, nil
	}
	ca, err := clusterpki.NewCA(c, now)
	if err != nil {
		return nil, err
	}
	if err := r.writeSecret(ctx, c, name, nil, map[string][]byte{clusterpki.CACertKey: ca.CertPEM, clusterpki.CAKeyKey: ca.KeyPEM}); err != nil {
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
