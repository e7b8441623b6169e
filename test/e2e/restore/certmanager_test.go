//go:build e2e

package restore

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// cmObject is a cert-manager object (cert-manager.io/v1) with the given spec.
func cmObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestCertManagerTLS: a TLS.auto cluster whose certificates come from cert-manager (issue 18
// item 3, "or asks cert-manager for them"), against cert-manager's own controllers
// (hack/cert-manager.sh).
//  1. A CA Issuer (its CA made by a SelfSigned issuer, as cert-manager's docs do it); a 3-member
//     cluster with TLS.auto.issuerRef naming it forms over TLS with certificates of that CA; a
//     client with the cluster's operator-tls Secret reads and writes; the Secrets cert-manager
//     wrote keep the cluster as controller (they go with it).
//  2. cert-manager renews the server certificate (as `cmctl renew` asks it to: the Issuing
//     condition); the operator copies it and every member serves it while a writer writes: the
//     cluster stays Available, no acknowledged write is lost.
//  3. A backup and a restore into a new name: the copy gets certificates of the same issuer for
//     its own names and holds the data. Deleting the copy deletes its certificates' Secrets.
//  4. The issuer's CA changes (issue 30 item 3) and cert-manager issues the certificates again
//     under it: the members move to it (both CAs trusted, a roll, the new certificates, the old
//     CA dropped, a roll) under a writer whose client follows the operator's Secret; no
//     acknowledged write is lost, the cluster Available at every look (every 500 ms).
func TestCertManagerTLS(t *testing.T) {
	if os.Getenv("E2E_CERT_MANAGER") != "1" {
		t.Skip("cert-manager is not running: hack/e2e.sh starts it on the local cluster (hack/cert-manager.sh up); with another cluster, set E2E_CERT_MANAGER=1 where cert-manager is installed")
	}
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "certmanager")
	ctx := t.Context()

	f.Create(t, cmObject("Issuer", ns, "selfsigned", map[string]any{"selfSigned": map[string]any{}}))
	f.Create(t, cmObject("Certificate", ns, "root-ca", map[string]any{
		"isCA": true, "commonName": "e2e root CA", "secretName": "root-ca",
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
		"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer", "group": "cert-manager.io"},
	}))
	f.Create(t, cmObject("Issuer", ns, "ca", map[string]any{"ca": map[string]any{"secretName": "root-ca"}}))
	var rootCA []byte
	framework.Eventually(t, 2*time.Minute, "cert-manager's root CA issued", func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "root-ca"}, s); err != nil {
			return false, err
		}
		rootCA = s.Data["tls.crt"]
		return len(rootCA) > 0, fmt.Errorf("no tls.crt yet")
	})

	db := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: etcdv1beta2.ClusterSpec{Size: 3,
		TLS: &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{IssuerRef: &etcdv1beta2.CertManagerIssuerRef{Name: "ca"}}}}}
	f.Create(t, db)
	start := time.Now()
	f.WaitClusterAvailable(t, ns, "db", 3, 5*time.Minute)
	t.Logf("MEASURE TLS.auto.issuerRef create -> Available (size 3): %s", time.Since(start).Round(100*time.Millisecond))
	db, err := f.GetCluster(ctx, ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db-peer-tls", "db-server-tls", "db-operator-tls"} {
		issued := secret(t, f, ns, name+"-issued")
		if ref := metav1.GetControllerOf(issued); ref == nil || ref.UID != db.UID {
			t.Fatalf("secret %s-issued, written by cert-manager, is not controlled by the cluster: %v", name, issued.OwnerReferences)
		}
	}
	if got := secret(t, f, ns, "db-peer-tls").Data["peer-ca.crt"]; string(got) != string(rootCA) {
		t.Fatal("the members' peer CA is not the issuer's CA")
	}
	if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-ca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator made a CA of its own: %v", err)
	}
	if got := parseCert(t, secret(t, f, ns, "db-server-tls").Data["server.crt"]).Issuer.CommonName; got != "e2e root CA" {
		t.Fatalf("the server certificate is issued by %q", got)
	}
	cli := tlsClient(t, f, ns, "db", clientURL(ns, "db"))
	framework.PutDataset(t, cli, prefix, 0, 300)
	want := framework.KeyspaceSHA256(t, cli, prefix)

	// 2. cert-manager renews the server certificate under load.
	before := certSerial(t, secret(t, f, ns, "db-server-tls-issued").Data["tls.crt"])
	w := framework.StartWriter(cli, "/cm-writes/")
	renew(t, f, ns, "db-server-tls")
	asked := time.Now()
	var renewed *big.Int
	framework.Eventually(t, 2*time.Minute, "cert-manager renewed the server certificate", func(context.Context) (bool, error) {
		renewed = certSerial(t, secret(t, f, ns, "db-server-tls-issued").Data["tls.crt"])
		return renewed.Cmp(before) != 0, fmt.Errorf("serial %x unchanged", renewed)
	})
	touch(t, f, ns, "db") // a pass now, not at the next steady re-check
	waitServed(t, f, ns, renewed)
	t.Logf("MEASURE cert-manager renewal reached every member: %s after it was asked for", time.Since(asked).Round(time.Second))
	w.Finish(t)
	f.WaitClusterAvailable(t, ns, "db", 3, time.Minute)

	// 3. Backup and a restore into a new name.
	backupAndCopy(t, f, stores, ns)
	copyServer := served(t, f, memberURL(ns, "db-copy", "db-copy-0"))
	if !slices.Contains(copyServer.DNSNames, "*.db-copy."+ns+".svc") {
		t.Fatalf("the copy's members serve a certificate for %v", copyServer.DNSNames)
	}
	if got := secret(t, f, ns, "db-copy-peer-tls").Data["peer-ca.crt"]; string(got) != string(rootCA) {
		t.Fatal("the copy's peer CA is not the issuer's CA")
	}
	copyCli := tlsClient(t, f, ns, "db-copy", clientURL(ns, "db-copy"))
	if got := framework.KeyspaceSHA256(t, copyCli, prefix); got != want {
		t.Fatalf("the copy's keyspace %s differs from the original's %s", got, want)
	}

	// Deleting the copy deletes the Secrets cert-manager wrote its keys into.
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-copy"}}
	if err := f.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, "db-copy's issued Secrets deleted with it", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"db-copy-peer-tls-issued", "db-copy-server-tls-issued", "db-copy-operator-tls-issued"} {
			if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("secret %s still there (%v)", name, err)
			}
		}
		return true, nil
	})
	secret(t, f, ns, "db-peer-tls-issued") // the original's stay

	// 4. The issuer's CA changes (root-ca issued again with a new key, as cert-manager 1.18's
	// default rotationPolicy Always does at each renewal) and cert-manager issues the three
	// certificates again under it: under a writer and a client that follows the operator's
	// Secret, the cluster moves to the new CA without a moment without trust.
	w = framework.StartWriter(etcdClientWith(t, f, f.SecretTLS(ns, "db-operator-tls"), clientURL(ns, "db")), "/cm-rotation/")
	watch := f.WatchClusterStatus(ns, "db")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crt := cmObject("Certificate", ns, "root-ca", nil)
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "root-ca"}, crt); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(crt.Object, "Always", "spec", "privateKey", "rotationPolicy"); err != nil {
			return err
		}
		return f.Client.Update(ctx, crt)
	})
	if err != nil {
		t.Fatal(err)
	}
	renew(t, f, ns, "root-ca")
	var newRoot []byte
	framework.Eventually(t, 2*time.Minute, "cert-manager issued a new root CA", func(context.Context) (bool, error) {
		newRoot = secret(t, f, ns, "root-ca").Data["tls.crt"]
		return string(newRoot) != string(rootCA), errors.New("root-ca unchanged")
	})
	rotated := time.Now()
	for _, name := range []string{"db-peer-tls", "db-server-tls", "db-operator-tls"} {
		renew(t, f, ns, name)
	}
	framework.Eventually(t, 8*time.Minute, "every member on the new root CA alone", func(context.Context) (bool, error) {
		touch(t, f, ns, "db")
		for _, k := range [][2]string{{"db-peer-tls", "peer"}, {"db-server-tls", "server"}, {"db-operator-tls", "etcd-client"}} {
			data := secret(t, f, ns, k[0]).Data
			if string(data[k[1]+"-ca.crt"]) != string(newRoot) || parseCert(t, data[k[1]+".crt"]).CheckSignatureFrom(parseCert(t, newRoot)) != nil {
				return false, fmt.Errorf("%s: not yet the new root's alone", k[0])
			}
		}
		cur, err := f.GetCluster(ctx, ns, "db")
		if err != nil {
			return false, err
		}
		return cur.Status.TLS != nil && cur.Status.TLS.CARotation == "" && len(cur.Status.Members.Outdated) == 0 && cur.Status.ReadyMembers == 3,
			fmt.Errorf("status.TLS %+v, outdated %v", cur.Status.TLS, cur.Status.Members.Outdated)
	})
	t.Logf("MEASURE cert-manager CA change reached every member: %s", time.Since(rotated).Round(time.Second))
	steps, unavailable := watch.Finish()
	w.Finish(t)
	if !slices.Contains(steps, etcdv1beta2.CARotationTrusting) || steps[len(steps)-1] != "" {
		t.Errorf("rotation steps %q: want Trusting seen and none at the end", steps)
	}
	if len(unavailable) > 0 {
		t.Errorf("the cluster was not Available at %d looks (every 500 ms) during the CA change: %v", len(unavailable), unavailable[:min(len(unavailable), 5)])
	}
	f.WaitClusterAvailable(t, ns, "db", 3, time.Minute)
}

// renew asks cert-manager to issue Certificate ns/name again, as `cmctl renew` does: the
// Issuing condition.
func renew(t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crt := cmObject("Certificate", ns, name, nil)
		if err := f.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, crt); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message": "renewal asked by the e2e test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(crt.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		return f.Client.Status().Update(t.Context(), crt)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// touch changes an annotation of cluster name so that the etcd operator runs a pass now.
func touch(t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := f.GetCluster(t.Context(), ns, name)
		if err != nil {
			return err
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["e2e/touched"] = time.Now().Format(time.RFC3339Nano)
		return f.Client.Update(t.Context(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
}
