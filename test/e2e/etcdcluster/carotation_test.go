//go:build e2e

package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/clusterpki"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestCARotationUnderLoad (issue 30 item 3): a 3-member TLS.auto cluster on volumes is asked
// for a new CA (the annotation) under a writer (a put every 20 ms) and a probe writing every
// 500 ms, through a client that, like an application reading the operator's client Secret,
// takes its certificate and its trusted CAs from the Secret at each connection. The rotation
// goes Trusting -> Issuing -> Retiring -> done (one event each): every CA file and certificate ends on the new CA
// alone, the same three members, every acknowledged write there, no probe gap over 5 s, the
// cluster Available at every look (every 500 ms) and the operator never locked out (its
// client is the one the Secret holds, and the cluster never stops being observed).
func TestCARotationUnderLoad(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-carotation")
	c := onVolumes(newCluster(ns, "c", 3))
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
	f.Create(t, c)
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	oldCA := clusterpki.ParseTrust(secretData(t, f, ns, "c-ca")["ca.crt"])
	before := memberIDs(t, f, ns)

	cli := etcdClient(t, f, f.SecretTLS(ns, "c"+etcdv1beta2.AutoTLSOperatorSuffix), "https://"+framework.ServiceDNSName("c-client", ns)+":2379")
	writer := framework.StartWriter(cli, "/rotate/")
	probe := watchAvailability(cli)
	watch := f.WatchClusterStatus(ns, "c")
	start := time.Now()
	framework.Eventually(t, time.Minute, "rotation asked for", func(ctx context.Context) (bool, error) {
		cur := getCluster(t, f, ns, "c")
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, etcdv1beta2.AnnotationRotateCA, start.UTC().Format(time.RFC3339))
		return f.Client.Update(ctx, cur) == nil, nil
	})
	var newCA clusterpki.Trust
	framework.Eventually(t, 10*time.Minute, "every member on the new CA alone", func(ctx context.Context) (bool, error) {
		newCA = clusterpki.ParseTrust(secretData(t, f, ns, "c-ca")["ca.crt"])
		if newCA.Equal(oldCA) {
			return false, errors.New("no new CA yet")
		}
		for _, s := range []struct{ name, cert, ca string }{{"c-peer-tls", "peer.crt", "peer-ca.crt"}, {"c-server-tls", "server.crt", "server-ca.crt"},
			{"c-operator-tls", etcdv1beta2.ClientTLSCertKey, etcdv1beta2.ClientTLSCAKey}} {
			data := secretData(t, f, ns, s.name)
			if !clusterpki.ParseTrust(data[s.ca]).Equal(newCA) || !newCA.Signs(data[s.cert]) {
				return false, fmt.Errorf("%s: CA file of %d CAs, certificate under the new CA: %t", s.name, clusterpki.ParseTrust(data[s.ca]).Len(), newCA.Signs(data[s.cert]))
			}
		}
		cur := getCluster(t, f, ns, "c")
		done := cur.Status.TLS != nil && cur.Status.TLS.CARotation == "" && len(cur.Status.Members.Outdated) == 0 && condition(cur, "Ready") == "True/ClusterHealthy"
		return done, fmt.Errorf("status.TLS %+v, outdated %v, Ready %s", cur.Status.TLS, cur.Status.Members.Outdated, condition(cur, "Ready"))
	})
	took := time.Since(start)
	gap, fails := probe.finish()
	steps, unavailable := watch.Finish()
	writer.Finish(t)
	after := memberIDs(t, f, ns)
	t.Logf("CA rotated in %s; steps %v; longest probe gap %s (%d probe writes failed); members %v -> %v",
		took.Round(100*time.Millisecond), steps, gap.Round(100*time.Millisecond), fails, before, after)
	// Issuing lasts one pass (the certificates are written in the pass that finds every member
	// ready for them) and Retiring until the kubelet copies them into the pods (its sync, 10 s
	// here): the looks may miss either, the events below may not. Trusting lasts the roll.
	order := []etcdv1beta2.CARotationStep{"", etcdv1beta2.CARotationTrusting, etcdv1beta2.CARotationIssuing, etcdv1beta2.CARotationRetiring, ""}
	if !inOrder(steps, order) || !slices.Contains(steps, etcdv1beta2.CARotationTrusting) || steps[len(steps)-1] != "" {
		t.Errorf("rotation steps %q, want Trusting, then at most Issuing and Retiring in that order, then none", steps)
	}
	if len(unavailable) > 0 {
		t.Errorf("the cluster was not Available at %d looks: %v", len(unavailable), unavailable[:min(len(unavailable), 5)])
	}
	if gap > 5*time.Second {
		t.Errorf("the cluster went %s without a successful write", gap)
	}
	if !slices.Equal(before, after) {
		t.Errorf("members %v -> %v: want the same members", before, after)
	}
	for _, reason := range []string{"CARotationTrusting", "CARotationIssuing", "CARotated"} {
		if n := countEvents(t, f, ns, reason); n != 1 {
			t.Errorf("%d %s events, want 1", n, reason)
		}
	}
}

// secretData is the data of Secret ns/name.
func secretData(t testing.TB, f *framework.Framework, ns, name string) map[string][]byte {
	t.Helper()
	s, err := f.Clientset.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// inOrder reports whether steps is a subsequence of order.
func inOrder(steps, order []etcdv1beta2.CARotationStep) bool {
	i := 0
	for _, s := range steps {
		for i < len(order) && order[i] != s {
			i++
		}
		if i == len(order) {
			return false
		}
		i++
	}
	return true
}
