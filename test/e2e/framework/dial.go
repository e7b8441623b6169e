//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// PodDNSName is the DNS name of a pod with hostname pod and subdomain service (a headless
// Service) in ns: <pod>.<service>.<ns>.svc.cluster.local.
func PodDNSName(pod, service, ns string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", pod, service, ns, ClusterDomain)
}

// ServiceDNSName is <service>.<ns>.svc.cluster.local.
func ServiceDNSName(service, ns string) string {
	return fmt.Sprintf("%s.%s.svc.%s", service, ns, ClusterDomain)
}

// Resolver resolves names through the cluster's DNS server (f.ClusterDNS), from the host.
func (f *Framework) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 5 * time.Second}
			return d.DialContext(ctx, network, f.ClusterDNS)
		},
	}
}

// DialContext dials address (host:port) from the host, resolving a host name through the
// cluster DNS. On the local cluster the host routes to pod and service addresses (the bridge
// and kube-proxy's rules), so pods and Services are reachable by their cluster names; it fits
// http.Transport.DialContext (DialTCP fits grpc.WithContextDialer).
func (f *Framework) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs := []string{host}
	if net.ParseIP(host) == nil {
		if addrs, err = f.Resolver().LookupHost(ctx, host); err != nil {
			return nil, fmt.Errorf("resolving %s via %s: %w", host, f.ClusterDNS, err)
		}
	}
	var errs []error
	d := net.Dialer{Timeout: 5 * time.Second}
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a, port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// DialTCP is DialContext over TCP, shaped for grpc.WithContextDialer (and so for etcd's
// clientv3.Config.DialOptions).
func (f *Framework) DialTCP(ctx context.Context, address string) (net.Conn, error) {
	return f.DialContext(ctx, "tcp", address)
}
