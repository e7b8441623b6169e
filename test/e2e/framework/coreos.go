//go:build e2e

package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// The objects of an etcd cluster as coreos/etcd-operator v0.9.4 makes them (its
// pkg/util/k8sutil: CreatePeerService, CreateClientService, newEtcdPod, UniqueMemberName; its
// pkg/util/etcdutil Member), for tests of what this project's operator does with a cluster that
// operator made. Where they differ from v0.9.4, the builder's comment says how and why.
const (
	// CoreosVersionAnnotation is the pod annotation in which coreos/etcd-operator keeps a
	// member's etcd version (k8sutil.SetEtcdVersion).
	CoreosVersionAnnotation = "etcd.version"
	// CoreosNodeLabel is the label coreos/etcd-operator puts on a member pod, its member's name
	// (this project's pods carry etcd_member instead).
	CoreosNodeLabel = "etcd_node"
	// coreosTolerateUnreadyAnnotation is the annotation v0.9.4 puts on both its Services
	// (k8sutil.TolerateUnreadyEndpointsAnnotation).
	coreosTolerateUnreadyAnnotation = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
	// coreosDataDir is v0.9.4's --data-dir, on the volume etcd-data mounted at /var/etcd.
	coreosDataDir = "/var/etcd/data"
	// coreosSuffixLength is the length of the random part of a coreos member name.
	coreosSuffixLength = 10
	// coreosMaxClusterName is how much of the cluster name a member name keeps (63 - 10 - 1).
	coreosMaxClusterName = 63 - coreosSuffixLength - 1
)

// CoreosOwner is coreos' EtcdCluster.AsOwner: the cluster as controller, without
// blockOwnerDeletion.
func CoreosOwner(c *etcdv1beta2.EtcdCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
		Name: c.Name, UID: c.UID, Controller: ptr.To(true),
	}
}

// CoreosLabels is k8sutil.LabelsForCluster: the labels and selector of both Services, and the
// member pods' labels with etcd_node.
func CoreosLabels(cluster string) map[string]string {
	return map[string]string{"etcd_cluster": cluster, "app": "etcd"}
}

// CoreosMemberName is k8sutil.UniqueMemberName: <cluster>-<10 random characters> from the same
// generator (k8s.io/apimachinery's rand.String: lower-case consonants and digits).
func CoreosMemberName(cluster string) string {
	if len(cluster) > coreosMaxClusterName {
		cluster = cluster[:coreosMaxClusterName]
	}
	return cluster + "-" + rand.String(coreosSuffixLength)
}

// CoreosMemberHost is v0.9.4's etcdutil.Member.Addr: <member>.<cluster>.<ns>.svc, without the
// cluster domain (a pod resolves it through its search path).
func CoreosMemberHost(c *etcdv1beta2.EtcdCluster, member string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, c.Name, c.Namespace)
}

// CoreosPeerURL is the member's peer URL in coreos' flags (plain http: no TLS).
func CoreosPeerURL(c *etcdv1beta2.EtcdCluster, member string) string {
	return "http://" + CoreosMemberHost(c, member) + ":2380"
}

// coreosPorts are v0.9.4's Service ports: client 2379, and on the peer Service peer 2380.
func coreosPorts(peer bool) []corev1.ServicePort {
	ports := []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(2379), Protocol: corev1.ProtocolTCP}}
	if peer {
		ports = append(ports, corev1.ServicePort{Name: "peer", Port: 2380, TargetPort: intstr.FromInt32(2380), Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// coreosService is v0.9.4's newEtcdServiceManifest with the cluster as controller.
func coreosService(c *etcdv1beta2.EtcdCluster, name, clusterIP string, peer bool) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace, Name: name, Labels: CoreosLabels(c.Name),
			Annotations:     map[string]string{coreosTolerateUnreadyAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{CoreosOwner(c)},
		},
		Spec: corev1.ServiceSpec{Ports: coreosPorts(peer), Selector: CoreosLabels(c.Name), ClusterIP: clusterIP},
	}
}

// CoreosPeerService is v0.9.4's CreatePeerService: the headless Service <cluster> (ports client
// 2379 and peer 2380, selector app=etcd,etcd_cluster=<cluster>) that gives the members their
// DNS names. One deviation: v0.9.4 publishes not-ready addresses through the
// service.alpha.kubernetes.io/tolerate-unready-endpoints annotation only (the
// publishNotReadyAddresses field is commented out there, a TODO); Kubernetes no longer honours
// that annotation (the endpoints and EndpointSlice controllers read the field only), and
// without it the members' DNS names would not exist before they are ready, which they cannot
// be before they find each other. So the field is set too, as a coreos cluster still running on
// today's Kubernetes must have had it to work.
func CoreosPeerService(c *etcdv1beta2.EtcdCluster) *corev1.Service {
	svc := coreosService(c, c.Name, corev1.ClusterIPNone, true)
	svc.Spec.PublishNotReadyAddresses = true
	return svc
}

// CoreosClientService is v0.9.4's CreateClientService: the ClusterIP Service <cluster>-client
// (port client 2379) clients connect to; its tolerate-unready-endpoints annotation is "true"
// in v0.9.4, which Kubernetes ignores now: only ready members are behind it.
func CoreosClientService(c *etcdv1beta2.EtcdCluster) *corev1.Service {
	return coreosService(c, c.Name+"-client", "", false)
}

// CoreosMemberPod is the pod v0.9.4's newEtcdPod makes for member name of cluster c on etcd
// version (e.g. "3.5.35"), bootstrapping a new cluster of the members initial (names, name
// among them), without TLS, volumes or a pod policy: labels app, etcd_cluster and etcd_node,
// the etcd.version annotation, the cluster as controller, hostname <name> and subdomain
// <cluster>, restartPolicy Never, no service account token, the data dir /var/etcd/data on the
// emptyDir etcd-data, and coreos' etcd flags, probes and ports. Deviations from v0.9.4:
//   - the image is this project's etcd image of that version (EtcdImage, the tag
//     quay.io/coreos/etcd:v<version> the local cluster imports, the same name coreos would
//     pull); it holds only etcd, etcdctl and etcdutl, no shell;
//   - so the probes, /bin/sh -ec "ETCDCTL_API=3 etcdctl endpoint status" in v0.9.4, run
//     /usr/local/bin/etcdctl endpoint status directly (etcdctl 3.4 and later speak the v3 API
//     by default). The etcd command itself is already exec form in v0.9.4 (its flag string
//     split at spaces), and /usr/local/bin/etcd is where this project's image has it too (the
//     path internal/member's pods run);
//   - coreos' busybox init container check-dns (nslookup of the member's own name until it
//     resolves) is left out: no busybox image offline. etcd does not need it without TLS: it
//     resolves no name at start when its advertised peer URL is written as in --initial-cluster,
//     and it retries its peers until their names resolve;
//   - every member starts with --initial-cluster-state=new, the whole initial cluster and one
//     --initial-cluster-token, the cluster's UID, as three members bootstrapping together must.
//     v0.9.4 starts one seed member (token a fresh UUID) and adds each further member through
//     the membership API, its pod then started with --initial-cluster-state=existing and no
//     token. The running etcd cluster is the same: started voting members with these names and
//     peer URLs, the pods shaped alike.
func CoreosMemberPod(c *etcdv1beta2.EtcdCluster, name, version string, initial []string) *corev1.Pod {
	var pairs []string
	for _, m := range initial {
		pairs = append(pairs, m+"="+CoreosPeerURL(c, m))
	}
	host := CoreosMemberHost(c, name)
	commands := fmt.Sprintf("/usr/local/bin/etcd --data-dir=%s --name=%s --initial-advertise-peer-urls=%s "+
		"--listen-peer-urls=%s --listen-client-urls=%s --advertise-client-urls=%s "+
		"--initial-cluster=%s --initial-cluster-state=%s",
		coreosDataDir, name, CoreosPeerURL(c, name), "http://0.0.0.0:2380", "http://0.0.0.0:2379", "http://"+host+":2379",
		strings.Join(pairs, ","), "new")
	commands += " --initial-cluster-token=" + string(c.UID)

	probe := func() *corev1.Probe { // v0.9.4's newEtcdProbe(false)
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/usr/local/bin/etcdctl", "endpoint", "status"}}},
			InitialDelaySeconds: 10, TimeoutSeconds: 10, PeriodSeconds: 60, FailureThreshold: 3,
		}
	}
	readiness := probe()
	readiness.InitialDelaySeconds, readiness.TimeoutSeconds, readiness.PeriodSeconds, readiness.FailureThreshold = 1, 5, 5, 3

	labels := CoreosLabels(c.Name)
	labels[CoreosNodeLabel] = name
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace, Name: name, Labels: labels,
			Annotations:     map[string]string{CoreosVersionAnnotation: version},
			OwnerReferences: []metav1.OwnerReference{CoreosOwner(c)},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "etcd",
				Image:   EtcdImage(version),
				Command: strings.Split(commands, " "),
				Ports: []corev1.ContainerPort{
					{Name: "server", ContainerPort: 2380, Protocol: corev1.ProtocolTCP},
					{Name: "client", ContainerPort: 2379, Protocol: corev1.ProtocolTCP},
				},
				VolumeMounts:   []corev1.VolumeMount{{Name: "etcd-data", MountPath: "/var/etcd"}},
				LivenessProbe:  probe(),
				ReadinessProbe: readiness,
			}},
			RestartPolicy:                corev1.RestartPolicyNever,
			Volumes:                      []corev1.Volume{{Name: "etcd-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Hostname:                     name,
			Subdomain:                    c.Name,
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
}

// coreosFormBound is how long CreateCoreosCluster waits for the coreos members to form their
// cluster: their pods scheduled and started, their DNS names published, their election held.
const coreosFormBound = 3 * time.Minute

// CreateCoreosMembers makes the objects of a coreos/etcd-operator v0.9.4 cluster of members
// members on etcd version, as a user who swapped the coreos operator's Deployment for this one
// would have them: EtcdCluster c, created paused (spec.paused is set on c) so that the etcd
// operator's first active pass comes after the coreos objects exist, then the peer and client
// Services (CoreosPeerService, CoreosClientService) and the member pods (CoreosMemberPod, all of
// one initial cluster), each pod passed to change first when change is not nil. It waits for
// nothing and returns the member pod names, sorted; c stays paused (the caller unpauses it).
func (f *Framework) CreateCoreosMembers(t testing.TB, c *etcdv1beta2.EtcdCluster, version string, members int, change func(*corev1.Pod)) []string {
	t.Helper()
	c.Spec.Paused = true
	f.Create(t, c)
	f.Create(t, CoreosPeerService(c))
	f.Create(t, CoreosClientService(c))
	names := make([]string, 0, members)
	for len(names) < members {
		if name := CoreosMemberName(c.Name); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		p := CoreosMemberPod(c, name, version, names)
		if change != nil {
			change(p)
		}
		f.Create(t, p)
	}
	t.Logf("coreos members %v of %s/%s on etcd %s", names, c.Namespace, c.Name, version)
	return names
}

// CreateCoreosCluster is CreateCoreosMembers (unchanged pods) followed by the wait until the
// coreos members formed their cluster: etcd's member list, read through the client Service, is
// exactly those members, each started and voting. It returns the member pod names, sorted; c
// stays paused.
func (f *Framework) CreateCoreosCluster(t testing.TB, c *etcdv1beta2.EtcdCluster, version string, members int) []string {
	t.Helper()
	names := f.CreateCoreosMembers(t, c, version, members, nil)
	cli := f.EtcdClient(t, ClientEndpoint(c.Namespace, c.Name))
	Eventually(t, coreosFormBound, "the coreos members form a cluster", func(ctx context.Context) (bool, error) {
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return false, err
		}
		var got []string
		for _, m := range ml.Members {
			switch {
			case m.Name == "":
				got = append(got, fmt.Sprintf("%x(unstarted)", m.ID))
			case m.IsLearner:
				got = append(got, m.Name+"(learner)")
			default:
				got = append(got, m.Name)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, names), fmt.Errorf("members %v, want %v started voting", got, names)
	})
	return names
}

// DescribeMembers is a member list as sorted names, "(learner)" after a learner's and
// "<id>(unstarted)" for a member not started yet: what a takeover's logs show step by step.
func DescribeMembers(members []*etcdserverpb.Member) []string {
	var out []string
	for _, m := range members {
		s := m.Name
		if s == "" {
			s = fmt.Sprintf("%x(unstarted)", m.ID)
		}
		if m.IsLearner {
			s += "(learner)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// DescribePods lists the pods of namespace ns as sorted names, "(terminating)" after a pod being
// deleted and "(coreos)" after one coreos/etcd-operator made: a takeover is finished when only
// this operator's member names are left, bare.
func (f *Framework) DescribePods(ctx context.Context, ns string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		name := p.Name
		if p.DeletionTimestamp != nil {
			name += "(terminating)"
		}
		if _, ok := p.Labels[CoreosNodeLabel]; ok {
			name += "(coreos)"
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}
