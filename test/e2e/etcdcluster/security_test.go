//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestRestrictedNamespace (issue 14 item 3): in a namespace that enforces Pod Security
// "restricted", a cluster with volumes runs on the operator's defaults (non-root with fsGroup,
// read-only root filesystem, no capabilities, RuntimeDefault seccomp, no service-account token,
// liveness on /livez); a member restarted on its volume keeps its data. A cluster that asks for
// root there is refused by the apiserver, and its status says so.
func TestRestrictedNamespace(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "etcd-restricted")
	nsObj := &corev1.Namespace{}
	if err := f.Client.Get(context.Background(), types.NamespacedName{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	before := nsObj.DeepCopy()
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := f.Client.Patch(context.Background(), nsObj, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	c := newCluster(ns, "c", 3)
	onVolumes(c)
	f.Create(t, c)
	root := newCluster(ns, "root", 1)
	root.Spec.Pod = &etcdv1beta2.PodPolicy{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}}
	f.Create(t, root)

	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	for _, p := range memberPods(t, f, ns, "c") {
		sc, ct := p.Spec.SecurityContext, p.Spec.Containers[0]
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.FSGroup == nil ||
			ct.SecurityContext == nil || ct.SecurityContext.ReadOnlyRootFilesystem == nil || !*ct.SecurityContext.ReadOnlyRootFilesystem ||
			p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken ||
			ct.LivenessProbe == nil || ct.LivenessProbe.HTTPGet.Path != "/livez" {
			t.Fatalf("pod %s: pod securityContext %+v, container %+v, liveness %+v", p.Name, sc, ct.SecurityContext, ct.LivenessProbe)
		}
	}
	cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
	put(t, cli, "k", "v")
	// A member restarted on the volume it wrote as non-root.
	old := memberPods(t, f, ns, "c")[1]
	deletePods(t, f, ns, old.Name)
	framework.Eventually(t, 3*time.Minute, "member "+old.Name+" recreated", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: old.Name}, p); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return p.UID != old.UID, nil
	})
	waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
	checkMembers(t, f, nil, "http", ns, "c", 3, "k", "v")

	framework.Eventually(t, time.Minute, "the root cluster to say Pod Security refused its pod", func(ctx context.Context) (bool, error) {
		got := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "root"}, got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
		if cond == nil || cond.Status != "True" || !strings.Contains(cond.Message, "violates PodSecurity") {
			return false, fmt.Errorf("conditions %v", conds(got))
		}
		return true, nil
	})
	if pods := memberPods(t, f, ns, "root"); len(pods) != 0 {
		t.Fatalf("%d pods of the root cluster exist in a restricted namespace", len(pods))
	}
}
