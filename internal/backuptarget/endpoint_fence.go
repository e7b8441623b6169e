package backuptarget

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// fenceEndpoints proves, through the API, that the qualified etcdEndpoints of a backup in
// namespace ns (from namespacedEndpoints) lead only to pods of ns. A name of the namespace is
// not enough: an ExternalName Service is a DNS alias that leads anywhere (another tenant's
// client Service), and the addresses of a Service without a selector, or of a hand-written
// EndpointSlice, are whatever their author wrote. So a Service must have a selector, must not
// be an ExternalName, and every address in its EndpointSlices must be the IP of the pod of ns
// that the endpoint's targetRef names; otherwise the backup is refused with EndpointNotAllowed.
//
// The returned addrs maps each host to the address the backup dials instead of what DNS says
// (TLS is still verified against the name): for a pod's name (<pod>.<svc>.<ns>.svc) the IP of
// the verified pod behind it; for a Service's name the IP and port of one of its verified,
// ready pods (the first by hostname), the pod port behind the Service port the endpoint names.
// So nothing written after the check (an EndpointSlice, a DNS record) decides where the backup
// connects.
//
// Endpoints that are not names of ns (administrator-allowed hosts) are left alone.
func fenceEndpoints(ctx context.Context, c client.Reader, ns string, endpoints []string) (map[string]string, error) {
	addrs := map[string]string{}
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, fmt.Errorf("parsing endpoint %q: %w", ep, err)
		}
		pod, svc, ok := namespaceName(u.Hostname(), ns)
		if !ok {
			continue // an allowed host (--allowed-etcd-endpoints)
		}
		port, err := strconv.ParseInt(cmp.Or(u.Port(), strconv.Itoa(etcdv1beta2.EtcdClientPort)), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("etcd endpoint %q: port: %w", ep, err)
		}
		targets, err := serviceTargets(ctx, c, ns, svc, int32(port))
		if err != nil {
			return nil, reasonFor(ep, err)
		}
		if pod == "" {
			hosts := slices.Sorted(maps.Keys(targets))
			if len(hosts) == 0 {
				return nil, reason.Transient(etcdv1beta2.ReasonEtcdUnreachable, fmt.Errorf("etcd endpoint %q: Service %s has no ready pod", ep, svc))
			}
			t := targets[hosts[0]]
			addrs[u.Hostname()] = net.JoinHostPort(t.ip, strconv.Itoa(int(t.port)))
			continue
		}
		t, ok := targets[pod]
		if !ok {
			return nil, reason.Transient(etcdv1beta2.ReasonEtcdUnreachable,
				fmt.Errorf("etcd endpoint %q: Service %s has no ready pod with the hostname %s", ep, svc, pod))
		}
		addrs[u.Hostname()] = t.ip
	}
	return addrs, nil
}

// target is a verified, ready pod behind a Service: its IP, and the pod port behind the
// Service port asked for.
type target struct {
	ip   string
	port int32
}

// reasonFor gives the refusal of endpoint ep its reason: errors that already carry one keep it.
func reasonFor(ep string, err error) error {
	if reason.Of(err) != "" {
		return err
	}
	return fmt.Errorf("checking etcd endpoint %q: %w", ep, err)
}

// namespaceName splits a host qualified by namespacedEndpoints (<svc>.<ns>.svc[.cluster.local]
// or <pod>.<svc>.<ns>.svc[.cluster.local]) into its pod (empty for a Service) and Service.
func namespaceName(host, ns string) (pod, svc string, ok bool) {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, suffix := range []string{"." + ns + ".svc." + clusterDomain, "." + ns + ".svc"} {
		if rest, found := strings.CutSuffix(name, suffix); found {
			labels := strings.Split(rest, ".")
			switch len(labels) {
			case 1:
				return "", labels[0], true
			case 2:
				return labels[0], labels[1], true
			}
		}
	}
	return "", "", false
}

// serviceTargets checks Service svc of ns (see fenceEndpoints) and returns its ready pods by
// their DNS hostname (the endpoint's hostname, else the pod's name), each with the pod port
// behind the Service's port port (the EndpointSlice port of that Service port's name, else its
// numeric targetPort, else the port itself).
func serviceTargets(ctx context.Context, c client.Reader, ns, svc string, port int32) (map[string]target, error) {
	s := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reason.Transient(etcdv1beta2.ReasonEtcdUnreachable, fmt.Errorf("no Service %s in namespace %s", svc, ns))
		}
		return nil, fmt.Errorf("getting Service %s/%s: %w", ns, svc, err)
	}
	switch {
	case s.Spec.Type == corev1.ServiceTypeExternalName:
		return nil, reason.Errorf(etcdv1beta2.ReasonEndpointNotAllowed,
			"Service %s is of type ExternalName (%s): an alias can lead outside namespace %s; name the cluster's own Service or use etcdCluster", svc, s.Spec.ExternalName, ns)
	case len(s.Spec.Selector) == 0:
		return nil, reason.Errorf(etcdv1beta2.ReasonEndpointNotAllowed,
			"Service %s has no selector: its endpoints are written by hand and can be any address; give it a selector of the etcd pods or use etcdCluster", svc)
	}
	i := slices.IndexFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return nil, reason.Transient(etcdv1beta2.ReasonEtcdUnreachable, fmt.Errorf("no port %d on Service %s", port, svc))
	}
	sp := s.Spec.Ports[i]
	podPort := sp.Port
	if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0 {
		podPort = sp.TargetPort.IntVal
	}
	slicesOf := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, slicesOf, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s/%s: %w", ns, svc, err)
	}
	targets := map[string]target{}
	pods := map[string]*corev1.Pod{}
	for _, sl := range slicesOf.Items {
		slicePort := podPort
		for _, p := range sl.Ports {
			if p.Port != nil && ptr.Deref(p.Name, "") == sp.Name {
				slicePort = *p.Port
			}
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			p, err := targetPod(ctx, c, ns, svc, sl.Name, e, pods)
			if err != nil {
				return nil, err
			}
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			host := p.Name
			if e.Hostname != nil && *e.Hostname != "" {
				host = *e.Hostname
			}
			targets[host] = target{ip: e.Addresses[0], port: slicePort}
		}
	}
	return targets, nil
}

// targetPod returns the pod of ns that endpoint e of EndpointSlice slice names, after checking
// that every address of e is that pod's IP (pods are read once, into pods). An endpoint that
// names no pod of ns is refused for good; one whose pod is gone, replaced or moved to another IP
// is refused for now, as the EndpointSlice controller lags pod changes for a moment.
func targetPod(ctx context.Context, c client.Reader, ns, svc, slice string, e discoveryv1.Endpoint, pods map[string]*corev1.Pod) (*corev1.Pod, error) {
	ref := e.TargetRef
	if ref == nil || ref.Kind != "Pod" || (ref.Namespace != "" && ref.Namespace != ns) {
		return nil, reason.Errorf(etcdv1beta2.ReasonEndpointNotAllowed,
			"EndpointSlice %s of Service %s lists %v, which is not a pod of namespace %s", slice, svc, e.Addresses, ns)
	}
	p, ok := pods[ref.Name]
	if !ok {
		p = &corev1.Pod{}
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, p)
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			return nil, fmt.Errorf("getting pod %s/%s: %w", ns, ref.Name, err)
		}
		pods[ref.Name] = p
	}
	for _, addr := range e.Addresses {
		if p == nil || (ref.UID != "" && ref.UID != p.UID) || !slices.ContainsFunc(p.Status.PodIPs, func(ip corev1.PodIP) bool { return ip.IP == addr }) {
			return nil, reason.Transient(etcdv1beta2.ReasonEndpointNotAllowed, fmt.Errorf(
				"EndpointSlice %s of Service %s lists the address %s for pod %s, which is not that pod's IP (or the pod is gone)", slice, svc, addr, ref.Name))
		}
	}
	return p, nil
}
