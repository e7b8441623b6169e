package member

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

func TestMemberPodPolicyAndTLS(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1"}, Spec: etcdv1beta2.ClusterSpec{
		Size: 3, Version: "3.5.35",
		Pod: &etcdv1beta2.PodPolicy{
			Resources:                 corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Tolerations:               []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			NodeSelector:              map[string]string{"disk": "ssd"},
			Annotations:               map[string]string{"a": "b"},
			EtcdEnv:                   []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}},
			SecurityContext:           &corev1.PodSecurityContext{FSGroup: new(int64)},
			PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{},
			Affinity:                  &corev1.Affinity{},
			AntiAffinity:              true,
		},
		TLS: &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}, OperatorSecret: "o"}},
	}}
	members := []cluster.Member{{ID: 1, Name: "c-0"}, {ID: 2, PeerURLs: []string{"https://c-3.c.ns.svc:2380"}}}
	p := NewPod(c, "c-3", "3.5.35", "existing", InitialCluster(c, members, "c-3"))
	ct := p.Spec.Containers[0]
	cmd := strings.Join(ct.Command, " ")
	for _, want := range []string{
		"--initial-cluster=c-0=https://c-0.c.ns.svc:2380,c-3=https://c-3.c.ns.svc:2380",
		"--initial-cluster-state=existing", "--listen-peer-urls=https://0.0.0.0:2380", "--listen-client-urls=https://0.0.0.0:2379",
		"--advertise-client-urls=https://c-3.c.ns.svc:2379", "--client-cert-auth=true", "--peer-client-cert-auth=true",
		"--cert-file=/etc/etcdtls/member/server-tls/server.crt", "--peer-key-file=/etc/etcdtls/member/peer-tls/peer.key",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	if ct.Image != "quay.io/coreos/etcd:v3.5.35" || PodVersion(p) != "3.5.35" {
		t.Errorf("image %s version %s", ct.Image, PodVersion(p))
	}
	if ct.Resources.Limits.Memory().String() != "1Gi" || len(ct.Env) != 1 || p.Spec.NodeSelector["disk"] != "ssd" ||
		len(p.Spec.Tolerations) != 1 || p.Annotations["a"] != "b" || p.Spec.SecurityContext == nil {
		t.Errorf("pod policy not applied: %+v", p.Spec)
	}
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity != nil {
		t.Errorf("affinity set: antiAffinity must not override it, got %+v", p.Spec.Affinity)
	}
	if v := p.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "c-3" {
		t.Errorf("data volume %+v, want the member's PVC", v)
	}
	if len(p.Spec.Volumes) != 3 || len(ct.VolumeMounts) != 3 {
		t.Errorf("TLS volumes missing: %+v", p.Spec.Volumes)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyAlways || ct.ReadinessProbe.HTTPGet.Port.IntValue() != MetricsPort {
		t.Errorf("restart policy %s probe %+v", p.Spec.RestartPolicy, ct.ReadinessProbe)
	}
	// Its own peer host resolves inside the pod before the cluster DNS publishes it, and no
	// other name is aliased.
	if a := p.Spec.HostAliases; len(a) != 1 || a[0].IP != "127.0.0.1" || len(a[0].Hostnames) != 1 || a[0].Hostnames[0] != "c-3.c.ns.svc" {
		t.Errorf("host aliases %+v, want c-3.c.ns.svc on 127.0.0.1 only", a)
	}
}

// TestMemberPodAntiAffinity: members spread across nodes by default (preferred) and across
// zones (preferred, below the nodes), antiAffinity keeps meaning required on nodes (zones still
// preferred), and an explicit affinity wins over both.
func TestMemberPodAntiAffinity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy *etcdv1beta2.PodPolicy
		want   string // preferred, required or custom
	}{
		{"no pod policy: preferred", nil, "preferred"},
		{"empty pod policy: preferred", &etcdv1beta2.PodPolicy{}, "preferred"},
		{"antiAffinity: required", &etcdv1beta2.PodPolicy{AntiAffinity: true}, "required"},
		{"affinity set: used as is", &etcdv1beta2.PodPolicy{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}, "custom"},
		{"affinity and antiAffinity: affinity as is", &etcdv1beta2.PodPolicy{AntiAffinity: true, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}, "custom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Pod: tc.policy}}
			a := NewPod(c, "c-0", "3.6.16", "new", "").Spec.Affinity
			got := "custom"
			if a != nil && a.PodAntiAffinity != nil {
				pa := a.PodAntiAffinity
				preferred := map[string]int32{}
				for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
					checkTerm(t, w.PodAffinityTerm)
					preferred[w.PodAffinityTerm.TopologyKey] = w.Weight
				}
				switch {
				case len(pa.RequiredDuringSchedulingIgnoredDuringExecution) == 1:
					got = "required"
					checkTerm(t, pa.RequiredDuringSchedulingIgnoredDuringExecution[0])
					if pa.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != TopologyHostname {
						t.Errorf("required term on %s, want %s", pa.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey, TopologyHostname)
					}
					if want := map[string]int32{TopologyZone: 50}; !maps.Equal(preferred, want) {
						t.Errorf("preferred weights %v, want %v", preferred, want)
					}
				case len(pa.RequiredDuringSchedulingIgnoredDuringExecution) == 0:
					got = "preferred"
					if want := map[string]int32{TopologyHostname: 100, TopologyZone: 50}; !maps.Equal(preferred, want) {
						t.Errorf("preferred weights %v, want %v", preferred, want)
					}
				}
			}
			if a == nil {
				got = "none"
			}
			if got != tc.want {
				t.Fatalf("affinity %+v is %s, want %s", a, got, tc.want)
			}
		})
	}
}

func checkTerm(t *testing.T, term corev1.PodAffinityTerm) {
	t.Helper()
	if (term.TopologyKey != TopologyHostname && term.TopologyKey != TopologyZone) || term.LabelSelector == nil ||
		term.LabelSelector.MatchLabels["etcd_cluster"] != "c" || term.LabelSelector.MatchLabels["app"] != "etcd" {
		t.Errorf("anti-affinity term %+v, want the cluster's members on a node or zone", term)
	}
}

// TestMemberPodNodeLossTolerations: an emptyDir member is evicted from a node that is not ready
// or unreachable after NodeLossToleration seconds instead of the API server's 300; a member on
// a volume keeps the default; a toleration of the policy for that taint wins.
func TestMemberPodNodeLossTolerations(t *testing.T) {
	user := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](600)}
	for _, tc := range []struct {
		name   string
		policy *etcdv1beta2.PodPolicy
		want   map[string]int64 // taint key -> tolerationSeconds
	}{
		{"emptyDir", nil, map[string]int64{corev1.TaintNodeNotReady: NodeLossToleration, corev1.TaintNodeUnreachable: NodeLossToleration}},
		{"volume", &etcdv1beta2.PodPolicy{PersistentVolumeClaimSpec: &corev1.PersistentVolumeClaimSpec{}}, map[string]int64{}},
		{"emptyDir, the policy tolerates unreachable", &etcdv1beta2.PodPolicy{Tolerations: []corev1.Toleration{user}}, map[string]int64{corev1.TaintNodeNotReady: NodeLossToleration, corev1.TaintNodeUnreachable: 600}},
		{"emptyDir, the policy tolerates everything", &etcdv1beta2.PodPolicy{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, map[string]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Pod: tc.policy}}
			got := map[string]int64{}
			for _, tol := range NewPod(c, "c-0", "3.6.16", "new", "").Spec.Tolerations {
				if tol.Key != "" && tol.TolerationSeconds != nil {
					got[tol.Key] = *tol.TolerationSeconds
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("tolerationSeconds %v, want %v", got, tc.want)
			}
		})
	}
}
