package backuptarget

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// runningPod creates pod name in ns with labels, running at ip (owned by owner when set).
func runningPod(t *testing.T, ns, name, ip string, labels map[string]string, owner client.Object) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdCluster",
			Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	create(t, p)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if err := k8s.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// slice creates an EndpointSlice of Service svc listing addr for pod (nil: no targetRef).
func slice(t *testing.T, ns, name, svc, addr string, pod *corev1.Pod) {
	t.Helper()
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}
	if pod != nil {
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		e.Hostname = ptr.To(pod.Name)
	}
	create(t, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{e}})
}

// TestEndpointsLeadOnlyToPodsOfTheNamespace is issue 30's reproduction against a real API
// server: tenant B names a Service of its own namespace that leads to tenant A's etcd (an
// ExternalName alias of A's client Service, or a Service whose endpoints B wrote by hand). Each
// is refused with EndpointNotAllowed before anything is dialed; a Service that selects B's own
// pod passes, and a pod's or a Service's name is dialed at that verified pod's IP.
func TestEndpointsLeadOnlyToPodsOfTheNamespace(t *testing.T) {
	ns := namespace(t)
	other := namespace(t)
	sel := map[string]string{"app": "db"}
	own := runningPod(t, ns, "db-0", "10.1.0.5", sel, nil)
	theirs := runningPod(t, other, "a-0", "10.1.0.9", sel, nil)
	svc := func(name string, mut func(*corev1.Service)) {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{{Port: 2379}}}}
		if mut != nil {
			mut(s)
		}
		create(t, s)
	}
	svc("alias", func(s *corev1.Service) {
		s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "a-client." + other + ".svc.cluster.local"}
	})
	svc("handmade", func(s *corev1.Service) { s.Spec.Selector = nil })
	slice(t, ns, "handmade-1", "handmade", theirs.Status.PodIP, nil)
	svc("injected", nil) // a selector, and a slice naming B's pod with A's IP
	slice(t, ns, "injected-1", "injected", theirs.Status.PodIP, own)
	svc("foreign", nil) // a selector, and a slice naming A's pod
	slice(t, ns, "foreign-1", "foreign", theirs.Status.PodIP, theirs)
	svc("db", nil)
	slice(t, ns, "db-1", "db", own.Status.PodIP, own)
	// A Service port in front of another pod port: the pod port of the slice is dialed.
	svc("mapped", func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromInt32(12379)}}
	})
	create(t, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "mapped-1", Labels: map[string]string{discoveryv1.LabelServiceName: "mapped"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr.To("client"), Port: ptr.To[int32](12379)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{own.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: own.Name, UID: own.UID}}}})

	cases := []struct {
		endpoint, reason string
		addrs            map[string]string
	}{
		{endpoint: "http://alias:2379", reason: etcdv1beta2.ReasonEndpointNotAllowed},
		{endpoint: "http://handmade:2379", reason: etcdv1beta2.ReasonEndpointNotAllowed},
		{endpoint: "http://injected:2379", reason: etcdv1beta2.ReasonEndpointNotAllowed},
		{endpoint: "http://foreign." + ns + ":2379", reason: etcdv1beta2.ReasonEndpointNotAllowed},
		{endpoint: "http://missing:2379", reason: etcdv1beta2.ReasonEtcdUnreachable},
		// A Service's name is dialed at a verified pod, not through DNS: an EndpointSlice or a
		// DNS record written after the check cannot redirect it.
		{endpoint: "http://db:2379", addrs: map[string]string{"db." + ns + ".svc": own.Status.PodIP + ":2379"}},
		{endpoint: "http://mapped:2379", addrs: map[string]string{"mapped." + ns + ".svc": own.Status.PodIP + ":12379"}},
		{endpoint: "http://db:2380", reason: etcdv1beta2.ReasonEtcdUnreachable}, // no such Service port
		{endpoint: "https://db-0.db." + ns + ".svc.cluster.local:2379", addrs: map[string]string{"db-0.db." + ns + ".svc.cluster.local": own.Status.PodIP}},
		{endpoint: "http://db-1.db." + ns + ".svc:2379", reason: etcdv1beta2.ReasonEtcdUnreachable}, // no such pod
	}
	for _, tc := range cases {
		eps, err := namespacedEndpoints(ns, []string{tc.endpoint}, nil)
		if err != nil {
			if got := reason.Of(err); got != tc.reason {
				t.Errorf("%s: refused by name with %s (%v), want %s", tc.endpoint, got, err, tc.reason)
			}
			continue
		}
		addrs, err := fenceEndpoints(t.Context(), k8s, ns, eps)
		if got := reason.Of(err); got != tc.reason {
			t.Errorf("%s: reason %q (%v), want %q", tc.endpoint, got, err, tc.reason)
			continue
		}
		if err == nil && !maps.Equal(addrs, tc.addrs) {
			t.Errorf("%s: dials %v, want %v", tc.endpoint, addrs, tc.addrs)
		}
	}
}

// TestMemberTargetsAreTheClustersOwnPods: a backup of an EtcdCluster dials the pods the cluster
// controls, at their IPs, never a name written into the status nor a pod that only carries the
// cluster's labels.
func TestMemberTargetsAreTheClustersOwnPods(t *testing.T) {
	ns := namespace(t)
	cl := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16"}}
	create(t, cl)
	labels := member.SelectorLabels(cl)
	runningPod(t, ns, "prod-a", "10.2.0.1", labels, cl)
	runningPod(t, ns, "prod-b", "10.2.0.2", labels, cl)
	runningPod(t, ns, "prod-c", "10.2.0.3", labels, nil) // the cluster's labels, not its pod

	eps, addrs, err := memberTargets(t.Context(), k8s, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://prod-a.prod." + ns + ".svc:2379", "http://prod-b.prod." + ns + ".svc:2379"}
	if !slices.Equal(eps, want) || addrs["prod-a.prod."+ns+".svc"] != "10.2.0.1" || addrs["prod-b.prod."+ns+".svc"] != "10.2.0.2" || len(addrs) != 2 {
		t.Fatalf("no ready members recorded: %v %v, want %v at their pods' IPs", eps, addrs, want)
	}

	// Whoever may write the status cannot add a host: only pod names count.
	cl.Status.Members.Ready = []string{"prod-b", "a-client.other.svc:2379/#", "prod-c"}
	eps, _, err = memberTargets(t.Context(), k8s, cl)
	if err != nil || !slices.Equal(eps, want[1:]) {
		t.Fatalf("status ready %v: %v (%v), want %v", cl.Status.Members.Ready, eps, err, want[1:])
	}

	cl.Status.Members.Ready = []string{"a-client.other.svc:2379/#"}
	if _, _, err := memberTargets(t.Context(), k8s, cl); reason.Of(err) != etcdv1beta2.ReasonEtcdUnreachable {
		t.Fatalf("no listed member is a pod of the cluster: %v, want %s", err, etcdv1beta2.ReasonEtcdUnreachable)
	}
}
