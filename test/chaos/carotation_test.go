//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// withAutoTLS makes the cluster TLS.auto on volumes: the load's client follows the operator's
// client Secret (clientOf).
func withAutoTLS(c *etcdv1beta2.EtcdCluster) {
	withVolumes(c)
	c.Spec.TLS = &etcdv1beta2.TLSPolicy{Auto: &etcdv1beta2.AutoTLS{}}
}

// operatorKilledMidCARotation asks for a new CA and, once the rotation is under way, at a
// seeded point of its about 90 s (the trust roll, the new certificates, the retirement of the
// old CA, the second roll), kills the etcd operator. The rotation must still finish (the CA
// files and certificates on the new CA alone, nothing outdated, every member ready) with no
// write lost and no stray member; heal counts from the kill to that.
func operatorKilledMidCARotation(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	c, err := f.GetCluster(t.Context(), ns, "c")
	if err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, etcdv1beta2.AnnotationRotateCA, time.Now().UTC().Format(time.RFC3339Nano))
	if err := f.Client.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, "the rotation under way", func(ctx context.Context) (bool, error) {
		cur, err := f.GetCluster(ctx, ns, "c")
		if err != nil {
			return false, err
		}
		return cur.Status.TLS != nil && cur.Status.TLS.CARotation != "", fmt.Errorf("status.TLS %+v", cur.Status.TLS)
	})
	time.Sleep(time.Duration(rng.IntN(90_000)) * time.Millisecond) //nolint:forbidigo // a seeded point inside the rotation
	cur, err := f.GetCluster(t.Context(), ns, "c")
	if err != nil {
		t.Fatal(err)
	}
	at := "after it ended"
	if cur.Status.TLS != nil && cur.Status.TLS.CARotation != "" {
		at = string(cur.Status.TLS.CARotation)
	} else if len(cur.Status.Members.Outdated) > 0 {
		at = "in the last roll"
	}
	killOperator(t, f, "etcd-operator")
	killed := time.Now()
	framework.Eventually(t, 6*time.Minute, "the rotation finished", func(ctx context.Context) (bool, error) {
		cur, err := f.GetCluster(ctx, ns, "c")
		if err != nil {
			return false, err
		}
		done := cur.Status.TLS != nil && cur.Status.TLS.CARotation == "" && len(cur.Status.TLS.TrustedCAs) == 1 &&
			len(cur.Status.Members.Outdated) == 0 && cur.Status.ReadyMembers == 3
		return done, fmt.Errorf("status.TLS %+v, outdated %v, %d ready", cur.Status.TLS, cur.Status.Members.Outdated, cur.Status.ReadyMembers)
	})
	return injected{size: 3, over: killed, note: fmt.Sprintf("the etcd operator killed %s; the rotation finished %.1f s later", at, time.Since(killed).Seconds())}
}
