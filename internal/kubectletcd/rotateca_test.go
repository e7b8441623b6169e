package kubectletcd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestRotateCA: `rotate-ca` writes the rotate-ca annotation (the current time) and follows
// status.TLS as the etcd operator writes it, each step once, to the end (exit 0); a cluster
// without TLS.auto, or whose CA is cert-manager's, is refused with nothing written.
func TestRotateCA(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "rotateca")
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	newCluster(t, ns, "plain", etcdv1beta2.ClusterStatus{})
	for _, name := range []string{"main", "issued"} {
		c := newCluster(t, ns, name, etcdv1beta2.ClusterStatus{TLS: &etcdv1beta2.TLSStatus{TrustedCAs: []string{"aaaa"}}})
		c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
		if name == "issued" {
			c.Spec.TLS.Auto.IssuerRef = &etcdv1beta2.CertManagerIssuerRef{Name: "ca", Kind: "Issuer"}
		}
		if err := k8s.Update(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct{ name, want string }{{"plain", "has no TLS.auto"}, {"issued", "rotate the issuer's CA"}} {
		out, errOut := &syncBuffer{}, &syncBuffer{}
		a := New(strings.NewReader(""), out, errOut)
		if code := a.Run(t.Context(), []string{"rotate-ca", tc.name, "--kubeconfig", kubeconfig, "-n", ns}); code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("rotate-ca %s: exit %d, stderr %q, want 1 and %q", tc.name, code, errOut.String(), tc.want)
		}
		c := &etcdv1beta2.EtcdCluster{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: tc.name}, c); err != nil {
			t.Fatal(err)
		}
		if v, ok := c.Annotations[etcdv1beta2.AnnotationRotateCA]; ok {
			t.Errorf("rotate-ca %s annotated it (%q)", tc.name, v)
		}
	}

	out, errOut, code := startCommand(context.Background(), now, ns, "rotate-ca", "main")
	key := client.ObjectKey{Namespace: ns, Name: "main"}
	var value string
	testutil.Eventually(t, testutil.Timeout, "the rotate-ca annotation", testutil.NoError(func() error {
		c := &etcdv1beta2.EtcdCluster{}
		if err := k8s.Get(t.Context(), key, c); err != nil {
			return err
		}
		if value = c.Annotations[etcdv1beta2.AnnotationRotateCA]; value != "2026-11-30T06:00:00Z" {
			return fmt.Errorf("annotation %q", value)
		}
		return nil
	}))
	step := func(want string, rotation etcdv1beta2.CARotationStep, trusted []string, outdated []string) {
		t.Helper()
		operatorStep(t, key, out, want, func(st *etcdv1beta2.ClusterStatus) {
			st.TLS = &etcdv1beta2.TLSStatus{LastCARotationRequest: value, CARotation: rotation, TrustedCAs: trusted}
			st.Members.Outdated = outdated
		})
	}
	step("Trusting: every CA file holds the old and the new CA", etcdv1beta2.CARotationTrusting, []string{"aaaa", "bbbb"}, []string{"main-0", "main-1", "main-2"})
	step("Issuing: every member accepts the new CA", etcdv1beta2.CARotationIssuing, []string{"aaaa", "bbbb"}, nil)
	step("Retiring: the old CA leaves", etcdv1beta2.CARotationRetiring, []string{"aaaa", "bbbb"}, nil)
	step("the members are rolled once more", "", []string{"bbbb"}, []string{"main-0", "main-1"})
	step("done: every member runs on the new CA alone (sha256:bbbb)", "", []string{"bbbb"}, nil)
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d; stderr:\n%s", c, errOut.String())
		}
	case <-time.After(testutil.Timeout):
		t.Fatal("rotate-ca did not return")
	}
	if n := strings.Count(out.String(), "Trusting:"); n != 1 {
		t.Errorf("Trusting printed %d times:\n%s", n, out.String())
	}
}
