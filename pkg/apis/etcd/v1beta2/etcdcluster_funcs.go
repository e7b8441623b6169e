package v1beta2

import "strings"

// Well-known ports of member pods.
const (
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
)

// EtcdVersion returns spec.version without a leading "v", or the default version if unset.
func (s *ClusterSpec) EtcdVersion() string {
	v := strings.TrimPrefix(s.Version, "v")
	if v == "" {
		return DefaultEtcdVersion
	}
	return v
}

// Image returns the etcd image member pods run: <repository>:v<version>.
func (s *ClusterSpec) Image() string {
	repo := s.Repository
	if repo == "" {
		repo = DefaultRepository
	}
	return repo + ":v" + s.EtcdVersion()
}

// IsSecureClient reports whether members serve clients over TLS.
func (t *TLSPolicy) IsSecureClient() bool {
	return t != nil && (t.Auto != nil || (t.Static != nil && t.Static.OperatorSecret != ""))
}

// IsSecurePeer reports whether members talk to each other over TLS.
func (t *TLSPolicy) IsSecurePeer() bool {
	return t != nil && (t.Auto != nil || (t.Static != nil && t.Static.Member != nil && t.Static.Member.PeerSecret != ""))
}

// Names of the Secrets the operator makes for TLS.auto, after the cluster's name.
const (
	AutoTLSCASuffix       = "-ca"
	AutoTLSPeerSuffix     = "-peer-tls"
	AutoTLSServerSuffix   = "-server-tls"
	AutoTLSOperatorSuffix = "-operator-tls"
)

// TLSSecrets names the Secrets the cluster's TLS uses: TLS.static as written, the operator's
// own Secrets for TLS.auto, nil without TLS. Every reader of certificates goes through it.
func (c *EtcdCluster) TLSSecrets() *StaticTLS {
	switch t := c.Spec.TLS; {
	case t == nil:
		return nil
	case t.Auto != nil:
		return &StaticTLS{
			Member:         &MemberSecret{PeerSecret: c.Name + AutoTLSPeerSuffix, ServerSecret: c.Name + AutoTLSServerSuffix},
			OperatorSecret: c.Name + AutoTLSOperatorSuffix,
		}
	default:
		return t.Static
	}
}

// ClientServiceName is the name of the Service clients connect to.
func (c *EtcdCluster) ClientServiceName() string { return c.Name + "-client" }

// ClientIdentity is the host name a TLS.auto cluster's members require in the client
// certificates they accept (etcd's --client-cert-allowed-hostname): its client Service's name,
// <cluster>-client.<ns>.svc, which the operator's client certificate and the members' server
// certificate carry.
func (c *EtcdCluster) ClientIdentity() string {
	return c.ClientServiceName() + "." + c.Namespace + ".svc"
}

// PeerServiceName is the name of the headless Service that gives members their DNS names.
func (c *EtcdCluster) PeerServiceName() string { return c.Name }
