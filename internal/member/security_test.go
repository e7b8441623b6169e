package member

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func restrictedViolations(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	v, err := testutil.RestrictedViolations(pod)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDefaultPodIsRestricted(t *testing.T) {
	for _, pvc := range []bool{false, true} {
		c := testCluster()
		if pvc {
			c.Spec.Pod = &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}
		}
		pod := NewPod(c, "c-0", "3.6.16", "new", "c-0=http://x")
		if v := restrictedViolations(t, pod); len(v) > 0 {
			t.Errorf("pvc=%v: the default member pod violates Pod Security restricted: %s", pvc, strings.Join(v, "; "))
		}
		sc := pod.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.FSGroup == nil || *sc.FSGroup != DefaultUser {
			t.Errorf("pvc=%v: pod security context %+v, want non-root user and fsGroup %d", pvc, sc, DefaultUser)
		}
		ct := pod.Spec.Containers[0].SecurityContext
		if ct == nil || ct.ReadOnlyRootFilesystem == nil || !*ct.ReadOnlyRootFilesystem {
			t.Errorf("pvc=%v: etcd container security context %+v, want a read-only root filesystem", pvc, ct)
		}
		if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
			t.Errorf("pvc=%v: the member pod mounts a service account token", pvc)
		}
	}
}

func TestUserSecurityContextsAreUsedAsGiven(t *testing.T) {
	c := testCluster()
	c.Spec.Pod = &etcdv1beta2.PodPolicy{
		SecurityContext:          &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)},
		ContainerSecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(false)},
	}
	pod := NewPod(c, "c-0", "3.6.16", "new", "c-0=http://x")
	if got := pod.Spec.SecurityContext; got.RunAsUser == nil || *got.RunAsUser != 0 || got.FSGroup != nil {
		t.Errorf("pod security context %+v, want the user's as given", got)
	}
	if got := pod.Spec.Containers[0].SecurityContext; *got.ReadOnlyRootFilesystem || got.Capabilities != nil {
		t.Errorf("container security context %+v, want the user's as given", got)
	}
	// A coreos-style root pod is what the user asked for; restricted says so.
	if len(restrictedViolations(t, pod)) == 0 {
		t.Error("a pod running as root passed restricted: the evaluator checks nothing")
	}
}

func TestLivenessPath(t *testing.T) {
	for version, want := range map[string]string{
		"3.6.16": "/livez", "3.5.11": "/livez", "3.5.35": "/livez",
		"3.5.10": "/health?serializable=true&exclude=NOSPACE", "3.5.0": "/health?serializable=true&exclude=NOSPACE",
	} {
		if got := LivenessPath(version); got != want {
			t.Errorf("LivenessPath(%s) = %s, want %s", version, got, want)
		}
		pod := NewPod(testCluster(), "c-0", version, "new", "c-0=http://x")
		ct := pod.Spec.Containers[0]
		if ct.LivenessProbe == nil || ct.LivenessProbe.HTTPGet.Path != want || ct.StartupProbe == nil || ct.StartupProbe.HTTPGet.Path != want {
			t.Errorf("%s: liveness %+v startup %+v, want both on %s", version, ct.LivenessProbe, ct.StartupProbe, want)
		}
	}
}

func testCluster() *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
}
