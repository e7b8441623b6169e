package backuptarget

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// clusterDomain is the DNS suffix of Services that a fully qualified endpoint may carry.
const clusterDomain = "cluster.local"

// namespacedEndpoints checks the etcdEndpoints of a backup in namespace ns. The operator can
// reach every namespace's etcd (and a control plane's), so an EtcdBackup may name only the
// Services and pods of its own namespace: <svc>, <svc>.<ns>, <svc>.<ns>.svc[.cluster.local] or
// <pod>.<svc>.<ns>.svc[.cluster.local], each rewritten to the fully qualified name so that the
// operator's own DNS search path (its namespace) never decides; or a host the administrator
// listed in allowed (--allowed-etcd-endpoints). IP addresses and other hosts are refused with
// EndpointNotAllowed.
func namespacedEndpoints(ns string, endpoints, allowed []string) ([]string, error) {
	out := make([]string, 0, len(endpoints))
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Hostname() == "" {
			return nil, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "etcd endpoint %q is not a URL like http://my-cluster-client:2379", ep)
		}
		if listed(u, allowed) {
			out = append(out, ep)
			continue
		}
		host, err := inNamespace(u.Hostname(), ns)
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonEndpointNotAllowed,
				"etcd endpoint %q: %v; name the cluster with etcdCluster, use a Service of namespace %s, or ask the administrator to list the host in the backup operator's --allowed-etcd-endpoints", ep, err, ns)
		}
		u.Host = net.JoinHostPort(host, u.Port())
		if u.Port() == "" {
			u.Host = host
		}
		out = append(out, u.String())
	}
	return out, nil
}

// listed reports whether u's host or host:port matches an allowed glob.
func listed(u *url.URL, allowed []string) bool {
	for _, glob := range allowed {
		if ok, _ := path.Match(glob, u.Hostname()); ok {
			return true
		}
		if ok, _ := path.Match(glob, u.Host); ok {
			return true
		}
	}
	return false
}

// inNamespace returns the name to dial for host if it names a Service, or a pod of a Service,
// in namespace ns: host itself when it is qualified (<...>.<ns>.svc or <...>.<ns>.svc.cluster.local),
// else qualified (<svc> and <svc>.<ns> become <svc>.<ns>.svc), so that neither the operator's
// DNS search path (its own namespace) nor an outside DNS name decides where it connects.
func inNamespace(host, ns string) (string, error) {
	if net.ParseIP(host) != nil {
		return "", fmt.Errorf("%s is an IP address, which could be any namespace's pod", host)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	qualified := false
	for _, suffix := range []string{".svc." + clusterDomain, ".svc"} {
		if strings.HasSuffix(name, suffix) {
			name, qualified = strings.TrimSuffix(name, suffix), true
			break
		}
	}
	labels := strings.Split(name, ".")
	switch {
	case len(labels) == 1 && !qualified: // <svc>
		return labels[0] + "." + ns + ".svc", nil
	case len(labels) == 2 && !qualified && labels[1] == ns: // <svc>.<ns>
		return name + ".svc", nil
	case qualified && (len(labels) == 2 || len(labels) == 3) && labels[len(labels)-1] == ns:
		return host, nil
	case len(labels) == 2 || (qualified && len(labels) == 3):
		return "", fmt.Errorf("%s is in namespace %s, not the backup's", host, labels[len(labels)-1])
	}
	return "", fmt.Errorf("%s is not a Service or pod of the backup's namespace", host)
}
