package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestAuth: a cluster with spec.auth grows like any other, then the operator turns etcd
// authentication on with the Secret's credentials. Credentials etcd refuses afterwards stop the
// operator (Degraded AuthFailed, a Warning event) without a member removed, replaced or added,
// and the cluster is Available again once the Secret is right.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "auth")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-root"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"password": []byte("first")}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c := newCluster(ns, "c", 3)
	c.Spec.Auth = &etcdv1beta2.AuthPolicy{SecretName: "etcd-root"}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	f := fakeFor(clusterConfig(ns))
	waitConverged(t, ns, f, 3)
	testutil.Eventually(t, testutil.Timeout, "authentication on", testutil.NoError(func() error {
		var err error
		f.set(func(f *fakeEtcd) {
			if !f.authOn || f.rootPassword != "first" || f.access.Username != "root" {
				err = fmt.Errorf("auth on %v, root password %q, the operator's user %q", f.authOn, f.rootPassword, f.access.Username)
			}
		})
		return err
	}))
	members, pods := f.list(), podNames(t, ns)

	secret.Data["password"] = []byte("second")
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "Degraded AuthFailed", testutil.NoError(func() error {
		if got := condition(getCluster(t, ns, "c"), etcdv1beta2.ClusterConditionDegraded); got != "True/"+etcdv1beta2.ReasonAuthFailed {
			return fmt.Errorf("Degraded %s", got)
		}
		return warningEvents(ns, etcdv1beta2.ReasonAuthFailed, 1)
	}))
	if got := f.list(); fmt.Sprint(got) != fmt.Sprint(members) {
		t.Fatalf("members changed while the credentials were refused: %v, were %v", got, members)
	}
	if got := podNames(t, ns); !slices.Equal(got, pods) {
		t.Fatalf("pods changed while the credentials were refused: %v, were %v", got, pods)
	}

	secret.Data["password"] = []byte("first")
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "healthy again", testutil.NoError(func() error {
		cl := getCluster(t, ns, "c")
		if got := condition(cl, etcdv1beta2.ClusterConditionDegraded); got != "False/ClusterHealthy" && got != "False/AsExpected" {
			return fmt.Errorf("Degraded %s", got)
		}
		if got := condition(cl, "Available"); got != "True/ClusterHealthy" {
			return fmt.Errorf("Available %s", got)
		}
		return nil
	}))
}

// touch changes an annotation of cluster c so that a pass runs now (the operator does not watch
// Secrets; it re-checks refused credentials every requeueBlocked).
func touch(t *testing.T, ns string) {
	t.Helper()
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["test/touched"] = metav1.Now().String()
	})
}
