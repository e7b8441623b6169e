package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestMemberRefusedByAdmission: a member pod the API server refuses (here Pod Security
// restricted, a cluster whose pods ask for root) gives Degraded=True/MemberRefused quoting the
// refusal and one Warning event, for a new cluster and for one restored from
// bootstrap.restore.source (whose Restored condition keeps waiting, not failed: the restore
// operator reads a failed one as a failed restore). Once the namespace admits the pods, the
// members are created with no other change. This is what a restore into a new name learns
// instead of the restore operator's server-side dry run, which needed pod create rights.
func TestMemberRefusedByAdmission(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cluster func(ns string) *etcdv1beta2.EtcdCluster
	}{
		{"new", func(ns string) *etcdv1beta2.EtcdCluster { return newCluster(ns, "c", 3) }},
		{"restored", func(ns string) *etcdv1beta2.EtcdCluster { return sourceCluster(ns, 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "nokubelet-refused")
			setPodSecurity(t, ns, "restricted")
			c := tc.cluster(ns)
			c.Spec.Pod = &etcdv1beta2.PodPolicy{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}}
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			waitDegraded(t, ns, "c", etcdv1beta2.ReasonMemberRefused, "violates PodSecurity")
			testutil.Eventually(t, testutil.Timeout, "one Warning event", testutil.NoError(func() error {
				return warningEvents(ns, etcdv1beta2.ReasonMemberRefused, 1)
			}))
			if got := podNames(t, ns); len(got) != 0 {
				t.Fatalf("pods %v", got)
			}
			if tc.name == "restored" {
				cond := meta.FindStatusCondition(getCluster(t, ns, "c").Status.Conditions, etcdv1beta2.ClusterConditionRestored)
				if cond == nil || cond.Reason != etcdv1beta2.ReasonRestoring || !strings.Contains(cond.Message, "waiting for the API server to admit the members") {
					t.Fatalf("Restored %+v, want Restoring and waiting for admission", cond)
				}
			}

			setPodSecurity(t, ns, "privileged")
			testutil.Eventually(t, testutil.Timeout, "members created once admitted", testutil.NoError(func() error {
				if got := podNames(t, ns); len(got) == 0 {
					return fmt.Errorf("no pod yet")
				}
				return nil
			}))
		})
	}
}

// setPodSecurity sets the Pod Security level enforced in namespace ns.
func setPodSecurity(t *testing.T, ns, level string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["pod-security.kubernetes.io/enforce"] = level
	if err := k8s.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
