package member

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// Labels and paths of member pods.
const (
	LabelApp     = "app"
	LabelCluster = "etcd_cluster"
	LabelMember  = "etcd_member"
	AppEtcd      = "etcd"

	DataDir       = "/var/etcd/data"
	DataVolume    = "etcd-data"
	PeerTLSDir    = "/etc/etcdtls/member/peer-tls"
	ServerTLSDir  = "/etc/etcdtls/member/server-tls"
	MetricsPort   = 2381
	ContainerName = "etcd"

	// TopologyHostname is the node label members spread over.
	TopologyHostname = "kubernetes.io/hostname"
	// TopologyZone is the well-known label of a node's zone.
	TopologyZone = "topology.kubernetes.io/zone"
)

// ReadinessPath is the etcd container's readiness probe: healthy with a leader and a working
// store, whatever the NOSPACE alarm says (etcd 3.5 and 3.6 take the exclude parameter).
const ReadinessPath = "/health?exclude=NOSPACE"

// The etcd container's readiness probe (GET ReadinessPath on the metrics port). A member that stops
// answering leaves the client Service's endpoints after about
// readinessPeriodSeconds*readinessFailureThreshold seconds.
const (
	// readinessPeriodSeconds is how often the kubelet asks.
	readinessPeriodSeconds = 5
	// readinessTimeoutSeconds bounds one /health call (etcd answers it only with a leader and
	// a working store, so a slow disk shows here).
	readinessTimeoutSeconds = 5
	// readinessFailureThreshold is how many failed calls in a row make the member not ready.
	readinessFailureThreshold = 3
)

// SelectorLabels selects the member pods of c.
func SelectorLabels(c *etcdv1beta2.EtcdCluster) map[string]string {
	return map[string]string{LabelApp: AppEtcd, LabelCluster: c.Name}
}

// SelectorString is the /scale selector of c.
func SelectorString(c *etcdv1beta2.EtcdCluster) string {
	return LabelApp + "=" + AppEtcd + "," + LabelCluster + "=" + c.Name
}

// Host is the DNS name of a member: <pod>.<cluster>.<ns>.svc[.<domain>].
func Host(c *etcdv1beta2.EtcdCluster, name string) string {
	h := fmt.Sprintf("%s.%s.%s.svc", name, c.PeerServiceName(), c.Namespace)
	if c.Spec.Pod != nil && c.Spec.Pod.ClusterDomain != "" {
		h += "." + strings.TrimPrefix(c.Spec.Pod.ClusterDomain, ".")
	}
	return h
}

func scheme(secure bool) string {
	if secure {
		return "https"
	}
	return "http"
}

// PeerURL is the peer URL of member name of c.
func PeerURL(c *etcdv1beta2.EtcdCluster, name string) string {
	return fmt.Sprintf("%s://%s:%d", scheme(c.Spec.TLS.IsSecurePeer()), Host(c, name), etcdv1beta2.EtcdPeerPort)
}

// ClientURL is the client URL of member name of c.
func ClientURL(c *etcdv1beta2.EtcdCluster, name string) string {
	return fmt.Sprintf("%s://%s:%d", scheme(c.Spec.TLS.IsSecureClient()), Host(c, name), etcdv1beta2.EtcdClientPort)
}

// InitialCluster renders --initial-cluster from members (by pod name) plus extra.
func InitialCluster(c *etcdv1beta2.EtcdCluster, members []cluster.Member, extra string) string {
	seen := map[string]bool{}
	var parts []string
	for _, m := range members {
		seen[m.PodName()] = true
		parts = append(parts, m.PodName()+"="+PeerURL(c, m.PodName()))
	}
	if extra != "" && !seen[extra] {
		parts = append(parts, extra+"="+PeerURL(c, extra))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// NewPod builds the pod of member name running version. state is "new" (seed) or
// "existing"; a member that starts on a data dir it already has ignores both. The pod carries
// SpecHash(c) in SpecHashAnnotation: the controller rolls members whose pods carry another.
func NewPod(c *etcdv1beta2.EtcdCluster, name, version, state, initial string) *corev1.Pod {
	pod := newPod(c, name, version, state, initial)
	pod.Annotations[SpecHashAnnotation] = SpecHash(c)
	return pod
}

// ForceNewCluster makes pod, a member's on its volume, start with --force-new-cluster: the
// member forms a cluster of itself alone from its data (a recovery from the survivors), and
// says so in etcdv1beta2.AnnotationForceNewCluster.
func ForceNewCluster(pod *corev1.Pod) {
	c := &pod.Spec.Containers[0]
	c.Command = append(c.Command, "--force-new-cluster")
	pod.Annotations[etcdv1beta2.AnnotationForceNewCluster] = "true"
}

// PodForcedNewCluster reports whether p was made with --force-new-cluster.
func PodForcedNewCluster(p *corev1.Pod) bool {
	return p.Annotations[etcdv1beta2.AnnotationForceNewCluster] != ""
}

// SpecHashAnnotation, on a member pod, is SpecHash of the cluster spec the pod was made from.
const SpecHashAnnotation = "etcd.database.coreos.com/spec-hash"

// SpecHash is a hash of what a member pod of c runs, whichever member it is: the spec of its
// pod built for a placeholder member with a placeholder version and membership, so that only
// the spec's pod policy, TLS, maintenance flags, repository and the operator's own pod
// template count. Left out on purpose: the version (an upgrade moves a member's image in place
// and must not roll it a second time), and the pod's labels and annotations (they change
// nothing a member runs; new pods carry the current ones). While the CA files of a TLS.auto
// cluster hold more than one CA (status.TLS.trustedCAs: a CA rotation), those count too: etcd
// loads its trusted CAs only when it starts, so a change of them rolls the members. One CA
// does not count, so that a cluster made before the operator recorded it is not rolled.
func SpecHash(c *etcdv1beta2.EtcdCluster) string {
	pod := newPod(c, "member", "0.0.0", "existing", "")
	raw, err := json.Marshal(pod.Spec)
	if err != nil { // a pod of plain fields always marshals
		panic(fmt.Sprintf("hashing a member pod: %v", err))
	}
	if t := c.Status.TLS; t != nil && len(t.TrustedCAs) > 1 {
		raw = append(raw, "\ntrusted-cas "+strings.Join(t.TrustedCAs, ",")...)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// PodSpecHash is the SpecHashAnnotation of p: "" for a pod made before the operator recorded
// it (such a pod is not rolled; it takes the current spec when it is next replaced).
func PodSpecHash(p *corev1.Pod) string { return p.Annotations[SpecHashAnnotation] }

func newPod(c *etcdv1beta2.EtcdCluster, name, version, state, initial string) *corev1.Pod {
	policy := c.Spec.Pod
	if policy == nil {
		policy = &etcdv1beta2.PodPolicy{}
	}
	labels := map[string]string{}
	for k, v := range policy.Labels {
		labels[k] = v
	}
	for k, v := range SelectorLabels(c) {
		labels[k] = v
	}
	labels[LabelMember] = name
	annotations := map[string]string{}
	for k, v := range policy.Annotations {
		annotations[k] = v
	}
	spec := c.Spec
	spec.Version = version
	liveness, startup := livenessProbes(version)
	container := corev1.Container{
		Name:            ContainerName,
		Image:           spec.Image(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         append([]string{"/usr/local/bin/etcd"}, etcdFlags(c, name, version, state, initial)...),
		Env:             policy.EtcdEnv,
		Resources:       policy.Resources,
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: etcdv1beta2.EtcdClientPort},
			{Name: "peer", ContainerPort: etcdv1beta2.EtcdPeerPort},
			{Name: "metrics", ContainerPort: MetricsPort},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: DataVolume, MountPath: "/var/etcd"}},
		// /health on the plain-HTTP metrics listener works the same with and without TLS. A
		// NOSPACE alarm does not make a member unready: reads go on, and the operator clears it.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: ReadinessPath, Port: intstr.FromInt32(MetricsPort)}},
			PeriodSeconds:    readinessPeriodSeconds,
			TimeoutSeconds:   readinessTimeoutSeconds,
			FailureThreshold: readinessFailureThreshold,
		},
		LivenessProbe:   liveness,
		StartupProbe:    startup,
		SecurityContext: ContainerSecurityContext(c),
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			Hostname:        name,
			Subdomain:       c.PeerServiceName(),
			RestartPolicy:   corev1.RestartPolicyAlways,
			Containers:      []corev1.Container{container},
			NodeSelector:    policy.NodeSelector,
			Tolerations:     tolerations(policy),
			SecurityContext: podSecurityContext(policy),
			// etcd never talks to the Kubernetes API.
			AutomountServiceAccountToken: ptr.To(false),
			HostAliases:                  selfAlias(c, name),
			Affinity:                     affinity(c, policy),
			// Scheduling beyond affinity: see scheduling.go.
			TopologySpreadConstraints: spreadConstraints(c, policy),
			PriorityClassName:         policy.PriorityClassName,
		},
	}
	if policy.PersistentVolumeClaimSpec != nil {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: DataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	} else {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: DataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	addTLSVolumes(c, pod)
	return pod
}

// selfAlias makes the member's own peer host name resolve inside its pod (to loopback: etcd
// listens on every address) from the first moment. A member joining a cluster resolves every
// --initial-cluster URL, its own included, before it starts (etcd's membership check compares
// them with the member list's URLs by address). The cluster DNS publishes a new pod's name only
// once the pod has an IP, a moment after its container starts, so that first lookup gets
// NXDOMAIN, which the DNS cache keeps (5 s on this project's local cluster, 30 s with kubeadm's
// CoreDNS defaults) and etcd waits out: every added member started that much late. The other
// members keep reaching it by DNS; only this pod sees the alias.
func selfAlias(c *etcdv1beta2.EtcdCluster, name string) []corev1.HostAlias {
	return []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{Host(c, name)}}}
}

// affinity is spec.pod.affinity when set. Otherwise members spread across nodes: required
// pod anti-affinity on the node name with antiAffinity: true, preferred (weight 100) without,
// so that one node going down takes at most one member where the nodes allow it; and across
// zones where nodes carry topology.kubernetes.io/zone (preferred, weight 50: below the nodes,
// so that two zones of several nodes still get one member per node). The Spread condition
// says when the nodes did not allow it.
func affinity(c *etcdv1beta2.EtcdCluster, policy *etcdv1beta2.PodPolicy) *corev1.Affinity {
	if policy.Affinity != nil {
		return policy.Affinity
	}
	term := func(key string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(c)}, TopologyKey: key}
	}
	zone := corev1.WeightedPodAffinityTerm{Weight: 50, PodAffinityTerm: term(TopologyZone)}
	if policy.AntiAffinity {
		return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{term(TopologyHostname)},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{zone},
		}}
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term(TopologyHostname)}, zone},
	}}
}

func etcdFlags(c *etcdv1beta2.EtcdCluster, name, version, state, initial string) []string {
	peer, client := scheme(c.Spec.TLS.IsSecurePeer()), scheme(c.Spec.TLS.IsSecureClient())
	flags := []string{
		"--name=" + name,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", peer, etcdv1beta2.EtcdPeerPort),
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", client, etcdv1beta2.EtcdClientPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", MetricsPort),
		"--advertise-client-urls=" + ClientURL(c, name),
		"--initial-advertise-peer-urls=" + PeerURL(c, name),
		"--initial-cluster=" + initial,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + string(c.UID),
	}
	if c.Spec.TLS.IsSecurePeer() {
		flags = append(flags, "--peer-client-cert-auth=true",
			"--peer-trusted-ca-file="+PeerTLSDir+"/peer-ca.crt",
			"--peer-cert-file="+PeerTLSDir+"/peer.crt",
			"--peer-key-file="+PeerTLSDir+"/peer.key")
		flags = append(flags, pinnedPeerFlags(c, name, version)...)
	}
	if c.Spec.TLS.IsSecureClient() {
		flags = append(flags, "--client-cert-auth=true",
			"--trusted-ca-file="+ServerTLSDir+"/server-ca.crt",
			"--cert-file="+ServerTLSDir+"/server.crt",
			"--key-file="+ServerTLSDir+"/server.key")
		flags = append(flags, pinnedClientFlags(c)...)
	}
	flags = append(flags, corruptionFlags(c, version)...)
	return append(flags, maintenanceFlags(c)...)
}

// pinnedPeerFlags pin the peers of a cluster whose certificates the operator makes (TLS.auto,
// also through a cert-manager issuer) to this cluster: a peer's client certificate must be
// valid for this cluster's member names (*.<cluster>.<ns>.svc), so a certificate the same CA or
// issuer signed for another cluster is refused.
//
// With the operator's own CA (TLS.auto without issuerRef: <cluster>-ca signs for this cluster
// alone), etcd's own check of a peer certificate's names against the reverse DNS lookup of the
// peer's address adds nothing to that and is skipped: it refused every new member until the
// DNS record of its fresh pod IP appeared and the negative answer cached before it expired (a
// 3-member TLS cluster took 56 s to form on the local cluster instead of 14 s; issue 30). A
// cert-manager issuer may sign these names for anyone who may request a Certificate, so there
// the DNS check stays: it binds the names to the address the peer connects from.
// Certificates a user brings (TLS.static) keep etcd's default checks: their names are not
// known here.
func pinnedPeerFlags(c *etcdv1beta2.EtcdCluster, name, version string) []string {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		return nil
	}
	flags := []string{"--peer-cert-allowed-hostname=" + Host(c, name)}
	if c.Spec.TLS.Auto.IssuerRef != nil {
		return flags
	}
	if cluster.CompareVersions(version, "3.6.0") < 0 {
		return append(flags, "--experimental-peer-skip-client-san-verification=true") // 3.5's name of the flag
	}
	return append(flags, "--peer-skip-client-san-verification=true")
}

// pinnedClientFlags pin the clients of a TLS.auto cluster to it: a client certificate must name
// c.ClientIdentity() (<cluster>-client.<ns>.svc), which the operator's client certificate and
// the members' server certificate (etcd's gateway dials its own member with it) carry, so a
// client certificate the same issuer signed for another cluster is refused. Clients with
// certificates of their own from a cert-manager issuer need that name in them.
func pinnedClientFlags(c *etcdv1beta2.EtcdCluster) []string {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		return nil
	}
	return []string{"--client-cert-allowed-hostname=" + c.ClientIdentity()}
}

func addTLSVolumes(c *etcdv1beta2.EtcdCluster, pod *corev1.Pod) {
	secrets := c.TLSSecrets()
	if secrets == nil || secrets.Member == nil {
		return
	}
	m := secrets.Member
	add := func(vol, secret, dir string) {
		if secret == "" {
			return
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: dir, ReadOnly: true})
	}
	add("member-peer-tls", m.PeerSecret, PeerTLSDir)
	add("member-server-tls", m.ServerSecret, ServerTLSDir)
}

// NewPVC builds the data volume claim of member name.
func NewPVC(c *etcdv1beta2.EtcdCluster, name string) *corev1.PersistentVolumeClaim {
	labels := SelectorLabels(c)
	labels[LabelMember] = name
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels},
		Spec:       *c.Spec.Pod.PersistentVolumeClaimSpec.DeepCopy(),
	}
}

// PodVersion is the etcd version of a pod's image tag ("quay.io/coreos/etcd:v3.6.16" -> 3.6.16).
func PodVersion(p *corev1.Pod) string {
	for _, ct := range p.Spec.Containers {
		if ct.Name == ContainerName {
			if i := strings.LastIndexByte(ct.Image, ':'); i >= 0 {
				return strings.TrimPrefix(ct.Image[i+1:], "v")
			}
		}
	}
	return ""
}

// PodFlags are the etcd flags ("--name=value") of p's etcd container, from its command and
// arguments.
func PodFlags(p *corev1.Pod) []string {
	var flags []string
	for _, ct := range p.Spec.Containers {
		if ct.Name != ContainerName {
			continue
		}
		for _, arg := range append(slices.Clone(ct.Command), ct.Args...) {
			if strings.HasPrefix(arg, "--") {
				flags = append(flags, arg)
			}
		}
	}
	return flags
}

// PodInitialCluster lists the member names in the --initial-cluster flag of a member pod's
// etcd container (nil when it has none).
func PodInitialCluster(p *corev1.Pod) []string {
	for _, ct := range p.Spec.Containers {
		if ct.Name != ContainerName {
			continue
		}
		for _, arg := range ct.Command {
			v, ok := strings.CutPrefix(arg, "--initial-cluster=")
			if !ok {
				continue
			}
			names := []string{}
			for _, kv := range strings.Split(v, ",") {
				if name, _, ok := strings.Cut(kv, "="); ok {
					names = append(names, name)
				}
			}
			return names
		}
	}
	return nil
}

// PodReady reports whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
