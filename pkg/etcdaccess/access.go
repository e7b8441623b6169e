// Package etcdaccess is how the operators prove who they are to an etcd cluster: a client
// certificate over TLS and, for a cluster that runs with authentication, an etcd user and
// password. Every client the operators open (membership, snapshots, the restore's checks) is
// configured from one Access, so none of them can forget the credentials.
package etcdaccess

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// Access says how to authenticate to one etcd cluster. The zero value is plain http without
// credentials.
type Access struct {
	// TLS is the client TLS configuration; nil for plain http endpoints.
	TLS *tls.Config
	// Username and Password are the etcd user's credentials; empty for a cluster without
	// authentication.
	Username string
	Password string
}

// ClientConfig is the clientv3 configuration for endpoints with this access. clientv3
// authenticates before the first call and again when a token expires; against a cluster whose
// authentication is off it goes on without a token, so credentials may be set before
// authentication is enabled.
func (a Access) ClientConfig(endpoints []string, dialTimeout time.Duration) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		TLS:         a.TLS,
		Username:    a.Username,
		Password:    a.Password,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	}
}

// DialAt is a clientv3 dial option that connects to addrs[host] for an endpoint host in addrs
// (an IP, dialed at the endpoint's port, or an IP and port), and to the endpoint as given
// otherwise: the operators dial a member's pod IP, read from a pod they verified through the API,
// rather than whatever DNS says the name is. gRPC verifies TLS against the endpoint's host, not
// against the address dialed.
func DialAt(addrs map[string]string) grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if to, ok := addrs[host]; ok {
				addr = to
				if _, _, err := net.SplitHostPort(to); err != nil {
					addr = net.JoinHostPort(to, port)
				}
			}
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
}

// IsAuthError reports whether etcd refused a call for who the caller is: wrong credentials,
// none where authentication is on, an expired or invalid token, or a user without the
// permission. Such an error is not an unreachable or unhealthy cluster, and retrying without
// new credentials does not fix it.
func IsAuthError(err error) bool {
	for _, e := range authErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

var authErrors = []error{
	rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrPermissionDenied,
	rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrInvalidAuthMgmt,
	rpctypes.ErrGRPCAuthFailed, rpctypes.ErrGRPCUserEmpty, rpctypes.ErrGRPCPermissionDenied,
	rpctypes.ErrGRPCInvalidAuthToken,
}
