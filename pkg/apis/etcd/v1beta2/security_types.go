package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Security settings of an EtcdCluster: etcd authentication (spec.auth) and TLS (spec.TLS).

// AuthPolicy names the credentials of a cluster that runs with etcd authentication.
type AuthPolicy struct {
	// secretName is a Secret in the cluster's namespace with the keys username (optional,
	// default root) and password: the type kubernetes.io/basic-auth fits. The user needs etcd's
	// root role (membership changes, snapshots, defragmentation and the restore's keyspace hash
	// require it); etcd enables authentication only when a user named root with that role
	// exists, so keep root unless authentication is already on. To change the password, change
	// it in etcd first (etcdctl user passwd), then in the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	SecretName string `json:"secretName"`
}

// TLSPolicy is the TLS configuration of an etcd cluster.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.static) && has(self.auto))",message="TLS.static and TLS.auto are exclusive: the certificates come from your Secrets or the operator makes them"
type TLSPolicy struct {
	// static uses certificates the user put into Kubernetes Secrets.
	// +optional
	Static *StaticTLS `json:"static,omitempty"`
	// auto has the operator make the cluster's certificates: a CA of its own, peer and server
	// certificates for the members' and the client Service's names, and a client certificate for
	// the operators, each in a Secret the cluster owns, renewed before they expire while the
	// members serve (etcd reads its certificate files at each new connection). Peer and client
	// traffic is TLS with client certificates required. A restore into a new name copies auto and
	// gets certificates for its own names.
	// +optional
	Auto *AutoTLS `json:"auto,omitempty"`
}

// AutoTLS configures the certificates the operator makes. The Secrets are <cluster>-ca
// (ca.crt, ca.key), <cluster>-peer-tls (peer.crt, peer.key, peer-ca.crt), <cluster>-server-tls
// (server.crt, server.key, server-ca.crt) and <cluster>-operator-tls (etcd-client.crt,
// etcd-client.key, etcd-client-ca.crt: the client certificate clients in the namespace may use).
//
// With issuerRef the CA is cert-manager's issuer instead and there is no <cluster>-ca.
//
// +kubebuilder:validation:XValidation:rule="!has(self.validity) || !has(self.renewBefore) || duration(self.renewBefore) < duration(self.validity)",message="TLS.auto.renewBefore must be shorter than TLS.auto.validity"
// +kubebuilder:validation:XValidation:rule="!has(self.issuerRef) || !has(self.validity) || duration(self.validity) >= duration('1h')",message="TLS.auto.validity must be at least 1h with an issuerRef: cert-manager refuses shorter certificates"
// +kubebuilder:validation:XValidation:rule="has(self.issuerRef) == has(oldSelf.issuerRef)",message="TLS.auto.issuerRef cannot be added or removed on an existing cluster: the members would meet certificates of another CA they do not trust; restore a backup into a new cluster instead"
type AutoTLS struct {
	// validity is how long each peer, server and client certificate is valid, as a Go duration
	// (e.g. 2160h). At least 10m (1h with issuerRef). Defaults to 2160h (90 days). The
	// operator's CA is valid for 10 years and replaced 2 years before it expires, or when
	// asked (annotation etcd.database.coreos.com/rotate-ca), without lock-out: status.TLS.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$')",message="TLS.auto.validity must be a Go duration such as 2160h or 90m (units h, m, s, ms, us, ns; no days)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$') || duration(self) >= duration('10m')",message="TLS.auto.validity must be a duration of at least 10m, such as 2160h"
	// +optional
	Validity *metav1.Duration `json:"validity,omitempty"`
	// renewBefore is how long before a certificate expires the operator replaces it. At least
	// 5m (the renewed Secret takes up to about a minute to reach the members' files). Defaults
	// to a third of validity, at least 5m.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$')",message="TLS.auto.renewBefore must be a Go duration such as 720h or 30m (units h, m, s, ms, us, ns; no days)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$') || duration(self) >= duration('5m')",message="TLS.auto.renewBefore must be a duration of at least 5m: a renewed certificate needs time to reach the members"
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
	// issuerRef has cert-manager issue the certificates: the operator creates a cert-manager
	// Certificate for each (<cluster>-peer-tls, <cluster>-server-tls, <cluster>-operator-tls,
	// with validity and renewBefore as duration and renewBefore), cert-manager writes it into
	// <name>-issued, and the operator copies a certificate into the Secret the members mount
	// once all three are issued (ca.crt holds the issuer's CA). cert-manager renews them; the
	// operator copies the renewed ones. Needs cert-manager installed (reason
	// CertManagerNotInstalled otherwise) and an issuer that fills ca.crt (the CA and Vault
	// issuers do; ACME does not). A change of the issuer's CA is followed without lock-out
	// (status.TLS.caRotation). The issuerRef cannot change once set.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="TLS.auto.issuerRef is immutable: the members trust the CA of the issuer they started with; restore a backup into a new cluster to change it"
	// +optional
	IssuerRef *CertManagerIssuerRef `json:"issuerRef,omitempty"`
}

// CertManagerIssuerRef names the cert-manager issuer of a cluster's certificates, as in a
// cert-manager Certificate's issuerRef.
type CertManagerIssuerRef struct {
	// name of the issuer: an Issuer in the cluster's namespace, or a ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
	// kind of the issuer: Issuer (default) or ClusterIssuer, or the kind of an external issuer.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// group of the issuer: cert-manager.io (default), or the API group of an external issuer.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:default=cert-manager.io
	// +optional
	Group string `json:"group,omitempty"`
}

// StaticTLS names the Secrets that hold the cluster's certificates.
//
// +kubebuilder:validation:XValidation:rule="has(self.operatorSecret) == (has(self.member) && has(self.member.serverSecret))",message="TLS.static.operatorSecret and TLS.static.member.serverSecret go together: a cluster that serves clients over TLS needs a client certificate for the operator, and the other way round"
type StaticTLS struct {
	// member names the Secrets that member pods use.
	// +optional
	Member *MemberSecret `json:"member,omitempty"`
	// operatorSecret is the Secret with the client certificate the operators use to talk to
	// this cluster: etcd-client.crt, etcd-client.key, etcd-client-ca.crt.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	OperatorSecret string `json:"operatorSecret,omitempty"`
}

// MemberSecret names the Secrets with the certificates of member pods.
type MemberSecret struct {
	// peerSecret is the Secret with the certificate members use between themselves:
	// peer.crt, peer.key, peer-ca.crt. Its certificate must be valid for
	// *.<cluster>.<namespace>.svc (and the same names with the cluster domain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PeerSecret string `json:"peerSecret,omitempty"`
	// serverSecret is the Secret with the certificate members serve clients with:
	// server.crt, server.key, server-ca.crt. Its certificate must be valid for the member names
	// and <cluster>-client.<namespace>.svc.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServerSecret string `json:"serverSecret,omitempty"`
}

// TLSStatus is what the members of a TLS.auto cluster are given to trust. etcd loads its
// trusted CAs only when it starts, so a new CA reaches the members in three steps, each member
// restarted one at a time in the first and the last (docs/security.md, "CA rotation").
type TLSStatus struct {
	// trustedCAs are the SHA-256 fingerprints (hex) of the CA certificates in the CA files of
	// the cluster's Secrets, which every member loads when it starts: two or more while a CA
	// rotation is under way (the old CA and the new one).
	// +optional
	TrustedCAs []string `json:"trustedCAs,omitempty"`
	// caRotation is the step of a CA rotation under way: Trusting (the CA files hold the old
	// and the new CA, the members are rolled one at a time so each loads both, and each must
	// accept a certificate of the new CA), Issuing (the certificates are issued again under
	// the new CA), Retiring (once every member serves the new certificates, the old CA leaves
	// the CA files and the members are rolled again). Empty when none is under way.
	// +optional
	CARotation CARotationStep `json:"caRotation,omitempty"`
	// message says what the step under way waits for (a member not ready yet, not yet
	// accepting a certificate of the new CA, still serving its former certificate).
	// +optional
	Message string `json:"message,omitempty"`
	// lastCARotationRequest is the value of the etcd.database.coreos.com/rotate-ca annotation
	// whose rotation the operator started last (it is done once caRotation is empty and no
	// member is outdated).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	LastCARotationRequest string `json:"lastCARotationRequest,omitempty"`
}

// CARotationStep is a step of a CA rotation (TLSStatus.caRotation).
type CARotationStep string

// The steps of a CA rotation.
const (
	CARotationTrusting CARotationStep = "Trusting"
	CARotationIssuing  CARotationStep = "Issuing"
	CARotationRetiring CARotationStep = "Retiring"
)

// AnnotationRotateCA, on an EtcdCluster with TLS.auto and no issuerRef, asks for a new CA: set
// it to a new value (a timestamp) and the operator makes a new CA and moves the members to it
// without a moment without trust (status.TLS.caRotation). A value already acted on is recorded
// on the CA Secret (<cluster>-ca) under the same key; a request made during a rotation waits
// for it to end. With issuerRef the issuer's CA is cert-manager's: a change of it is followed
// the same way without this annotation.
const AnnotationRotateCA = "etcd.database.coreos.com/rotate-ca"
