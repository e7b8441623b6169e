// Package cluster holds the etcd domain logic of the etcd operator: a narrow client for the
// membership and maintenance APIs (clientv3 underneath) and the pure decision logic that picks
// the next single step for a cluster from what was observed. It does not import
// controller-runtime: the controller observes Kubernetes, this package reasons about etcd.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// Member is one etcd member as the membership API reports it.
type Member struct {
	ID         uint64
	Name       string // empty until the member has started once
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// Started reports whether the member has ever started (an added member has no name until then).
func (m Member) Started() bool { return m.Name != "" }

// PodName is the member's pod name: its etcd name, or, for a member that never started, the
// first DNS label of its peer URL (members are added with <pod>.<service>... peer URLs).
func (m Member) PodName() string {
	if m.Name != "" {
		return m.Name
	}
	for _, p := range m.PeerURLs {
		if u, err := url.Parse(p); err == nil && u.Hostname() != "" {
			return strings.SplitN(u.Hostname(), ".", 2)[0]
		}
	}
	return ""
}

// EndpointStatus is what one member says about itself.
type EndpointStatus struct {
	MemberID         uint64
	Leader           uint64
	Version          string
	RaftIndex        uint64
	RaftAppliedIndex uint64
	IsLearner        bool
	// Errors are the errors the member reports about itself (no leader, ...), alarms excluded.
	Errors []string
	// Alarms are the cluster's active alarms as the member reports them ("memberID:<id>
	// alarm:NOSPACE"): an alarm makes writes fail but says nothing about the member's health.
	Alarms []string
	// Revision is the store revision the member answered at.
	Revision int64
	// DBSize and DBSizeInUse are the backend database's file size and the part of it in use.
	DBSize      int64
	DBSizeInUse int64
	// StorageVersion is the version of the member's on-disk schema (etcd 3.6 and later; ""
	// from 3.5, which does not report it). After a downgrade is enabled it drops to the
	// target once the member migrated its data: only then may the member run the older release.
	StorageVersion string
	// DowngradeTarget is the version the cluster is being downgraded to, as this member
	// reports it ("3.5.0"); "" when no downgrade is enabled or the member runs 3.5, which does
	// not report it.
	DowngradeTarget string
}

// Client is the narrow view of an etcd cluster the operator needs. Every method bounds its
// own call with the request timeout of the Config it was made from.
type Client interface {
	// MemberList lists the members. It asks for a linearizable list first; when that fails
	// (no quorum, or the answering member is cut off from the leader) it falls back to the
	// answering member's own serializable view, so that a cluster that lost quorum can still be
	// observed, and says so: Membership.Linearizable is false. Only a linearizable list may
	// justify a membership change or a deletion.
	MemberList(ctx context.Context) (Membership, error)
	// AddLearner adds a non-voting member with the given peer URL and returns it;
	// ErrNotReadyForChange while etcd's quorum protection refuses the change.
	AddLearner(ctx context.Context, peerURL string) (Member, error)
	// Promote makes a learner a voting member; ErrLearnerNotReady while it is catching up.
	Promote(ctx context.Context, id uint64) error
	// Remove removes a member; removing a member that is already gone is not an error.
	// ErrNotReadyForChange while etcd's quorum protection refuses the change.
	Remove(ctx context.Context, id uint64) error
	// Status asks the member at endpoint about itself. The caller passes a URL it computed for
	// a pod it owns, never one a member advertises, and checks EndpointStatus.MemberID.
	Status(ctx context.Context, endpoint string) (EndpointStatus, error)
	// Alarms lists the cluster's active alarms.
	Alarms(ctx context.Context) ([]Alarm, error)
	// Disarm clears one alarm, through the member at endpoint (a URL the caller computed for a
	// pod it owns; "": any member). A member just removed stops its raft: a request it takes
	// fails, so after a removal the caller names a member that stays.
	Disarm(ctx context.Context, endpoint string, a Alarm) error
	// HashKV asks the member at endpoint (a URL the caller computed for a pod it owns) for its
	// hash of the key-value store at revision rev (0: its newest).
	HashKV(ctx context.Context, endpoint string, rev int64) (KVHash, error)
	// EnableDowngrade asks etcd, through the member at endpoint (a URL the caller computed for
	// a pod it owns), to check that the cluster can be downgraded to version (a MAJOR.MINOR
	// release one below the cluster's, e.g. "3.5") and then to enable that downgrade: the
	// cluster runs the older release's protocol and the members migrate their storage to it.
	// A downgrade enabled already is not an error; etcd's refusal says why (a skipped minor, a
	// member on another release).
	EnableDowngrade(ctx context.Context, endpoint, version string) error
	// CancelDowngrade cancels an enabled downgrade, through the member at endpoint (one that
	// reports it: a member of the newer release), so its members may run the newer release
	// again. No downgrade in progress is not an error.
	CancelDowngrade(ctx context.Context, endpoint string) error
	// Compact compacts the key-value history up to rev and waits until the compaction is
	// applied; a history already compacted at or beyond rev is not an error.
	Compact(ctx context.Context, rev int64) error
	// Defragment defragments the backend of the member at endpoint (a URL the caller computed
	// for a pod it owns). It blocks that member's reads and writes while it runs, and may take
	// up to DefragmentTimeout.
	Defragment(ctx context.Context, endpoint string) error
	// MoveLeader asks the leader, at leaderEndpoint (a URL the caller computed for a pod it
	// owns), to hand leadership to the voting member to and waits until it has.
	MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error
	// AuthEnabled reports whether the cluster runs with authentication.
	AuthEnabled(ctx context.Context) (bool, error)
	// EnableAuth turns authentication on for the user of the client's Access: it adds the
	// user (an existing one gets the Access's password: while authentication is off anybody
	// could have made it), grants it the root role and enables authentication. Each step is
	// idempotent, so a pass cut short is finished by the next.
	EnableAuth(ctx context.Context) error
	// Close releases the connections.
	Close() error
}

// Alarm is an alarm a member raised; the cluster refuses writes while a NOSPACE alarm is
// active.
type Alarm struct {
	MemberID uint64
	// Type is the alarm's name as etcd spells it: NOSPACE, CORRUPT.
	Type string
}

// KVHash is one member's hash of its key-value store (etcd's HashKV).
type KVHash struct {
	MemberID uint64
	// Revision is the revision hashed; CompactRevision the member's compacted revision then.
	Revision, CompactRevision int64
	Hash                      uint32
}

// AlarmCorrupt is the alarm etcd's corruption checks raise; it stops every read and write.
const AlarmCorrupt = "CORRUPT"

// AlarmNoSpace is the alarm a member raises when its database reaches the backend quota.
const AlarmNoSpace = "NOSPACE"

// HashKVTimeout bounds one member's hash of its key-value store: it reads every key revision
// (seconds per GiB).
const HashKVTimeout = 2 * time.Minute

// DefragmentTimeout bounds one member's defragmentation: it rewrites the whole database file.
const DefragmentTimeout = 10 * time.Minute

// ErrLearnerNotReady is returned by Promote while the learner has not caught up with the leader.
var ErrLearnerNotReady = errors.New("learner is not in sync with the leader yet")

// ErrNotReadyForChange is returned by AddLearner while etcd refuses membership changes because
// a member became active only moments ago; try again shortly.
var ErrNotReadyForChange = errors.New("cluster is not ready for a membership change yet")

// Membership is one answer of the membership API.
type Membership struct {
	Members []Member
	// ClusterID is the ID of the etcd cluster the answering member belongs to.
	ClusterID uint64
	// Linearizable is true when the list went through the leader (a read index), so it holds
	// every change committed before the call; false when it is one member's own view.
	Linearizable bool
}

// Config says how to reach a cluster.
type Config struct {
	// Endpoints are the client URLs the caller computed for the member pods it owns. The
	// client dials only these (and the endpoints passed to Status), never the URLs members
	// advertise. Each URL's host starts with the member's name (<pod>.<service>...).
	Endpoints []string
	// Access is the client certificate and the etcd credentials.
	Access etcdaccess.Access
	// DialTimeout bounds connecting to an endpoint (clientv3's DialTimeout).
	DialTimeout time.Duration
	// RequestTimeout bounds each call (DefaultRequestTimeout when zero); a linearizable member
	// list gets 1/linearizableShare of it per endpoint, so that a serializable fallback fits.
	RequestTimeout time.Duration
	// Addrs maps an endpoint's host to the IP address to connect to instead of looking the host
	// up (a member pod's IP, which the API server reports the moment the pod has one). The host
	// stays the one TLS verifies. Cluster DNS publishes a new pod's name a moment after its IP
	// is known, and an earlier lookup's NXDOMAIN (etcd's leader tries the new member's name as
	// soon as it is added) stays in the DNS cache for its TTL: 5 s on this project's local
	// cluster, 30 s with kubeadm's CoreDNS defaults, during which the name cannot be dialed.
	// Hosts not in Addrs are looked up.
	Addrs map[string]string
}

// DefaultRequestTimeout bounds each etcd call when Config.RequestTimeout is zero. The
// operators pass their --etcd-request-timeout flag instead.
const DefaultRequestTimeout = 15 * time.Second

// One linearizable MemberList attempt may take 1/linearizableShare of the request timeout: a member without quorum blocks that call until its deadline, and the serializable
// fallback needs time of its own.
const linearizableShare = 3

type etcdClient struct {
	c         *clientv3.Client
	endpoints []string
	timeout   time.Duration
	access    etcdaccess.Access
	cfg       Config
}

// New connects to the cluster at cfg.Endpoints. The connection is lazy: an unreachable cluster
// shows up as errors from the calls, not from New.
func New(cfg Config) (Client, error) {
	ccfg := cfg.Access.ClientConfig(cfg.Endpoints, cfg.DialTimeout)
	if len(cfg.Addrs) > 0 {
		ccfg.DialOptions = append(ccfg.DialOptions, etcdaccess.DialAt(cfg.Addrs))
	}
	c, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %v: %w", cfg.Endpoints, err)
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return &etcdClient{c: c, endpoints: cfg.Endpoints, timeout: timeout, access: cfg.Access, cfg: cfg}, nil
}

func (e *etcdClient) MemberList(ctx context.Context) (Membership, error) {
	// Linearizable first, so that a change made a moment ago is seen. A learner refuses the
	// call and the client sends each call to the next endpoint: try each endpoint once.
	var resp *clientv3.MemberListResponse
	var err error
	for i := 0; i < max(1, len(e.endpoints)); i++ {
		lctx, lcancel := context.WithTimeout(ctx, e.timeout/linearizableShare)
		resp, err = e.c.MemberList(lctx)
		lcancel()
		if !errors.Is(err, errNotSupportedForLearner) {
			break
		}
	}
	linearizable := err == nil
	if err != nil {
		// A cluster without quorum cannot answer that: the answering member's own view, to
		// observe (and report) the loss, never to act on.
		sctx, scancel := context.WithTimeout(ctx, e.timeout)
		defer scancel()
		if resp, err = e.c.MemberList(sctx, clientv3.WithSerializable()); err != nil {
			return Membership{}, fmt.Errorf("listing members: %w", err)
		}
	}
	out := Membership{ClusterID: resp.Header.GetClusterId(), Linearizable: linearizable}
	voters := map[string]bool{}
	for _, m := range resp.Members {
		out.Members = append(out.Members, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
		if !m.IsLearner && m.Name != "" {
			voters[m.Name] = true
		}
	}
	// Learners refuse membership calls: send the following calls to the voting members'
	// endpoints only, picked from the caller's own URLs by member name.
	var keep []string
	for _, ep := range e.endpoints {
		if voters[endpointName(ep)] {
			keep = append(keep, ep)
		}
	}
	if len(keep) > 0 && len(keep) < len(e.endpoints) {
		e.c.SetEndpoints(keep...)
	}
	return out, nil
}

// endpointName is the first DNS label of an endpoint's host: the member's pod name for the
// URLs the operator computes (<pod>.<service>.<namespace>.svc...).
func endpointName(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return strings.SplitN(u.Hostname(), ".", 2)[0]
}

func (e *etcdClient) AddLearner(ctx context.Context, peerURL string) (Member, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.c.MemberAddAsLearner(ctx, []string{peerURL})
	if retryable(err) {
		return Member{}, fmt.Errorf("adding learner %s: %w", peerURL, ErrNotReadyForChange)
	}
	if err != nil {
		return Member{}, fmt.Errorf("adding learner %s: %w", peerURL, err)
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}, nil
}

func (e *etcdClient) Promote(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if _, err := e.c.MemberPromote(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || retryable(err) {
			return fmt.Errorf("promoting member %x: %w", id, ErrLearnerNotReady)
		}
		return fmt.Errorf("promoting member %x: %w", id, err)
	}
	return nil
}

func (e *etcdClient) Remove(ctx context.Context, id uint64) error {
	rctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	_, err := e.c.MemberRemove(rctx, id)
	// "server stopped": the member that served the request was the one removed, and stopped
	// before answering. The removal may or may not have committed: a linearizable member list
	// without the member says it did (so the caller goes on as after a removal: its event, the
	// pod's deletion), otherwise a retry finds out (removing a removed member succeeds).
	if retryable(err) || errors.Is(err, rpctypes.ErrStopped) {
		if gone, lerr := e.removed(ctx, id); lerr == nil && gone {
			return nil
		}
		return fmt.Errorf("removing member %x: %w", id, ErrNotReadyForChange)
	}
	if err != nil && !errors.Is(err, rpctypes.ErrMemberNotFound) {
		return fmt.Errorf("removing member %x: %w", id, err)
	}
	return nil
}

// removed reports whether a linearizable member list lacks member id.
func (e *etcdClient) removed(ctx context.Context, id uint64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.c.MemberList(ctx) // linearizable: clientv3's default
	if err != nil {
		return false, err
	}
	for _, m := range resp.Members {
		if m.ID == id {
			return false, nil
		}
	}
	return true, nil
}

func (e *etcdClient) Status(ctx context.Context, endpoint string) (EndpointStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	s, err := e.c.Status(ctx, endpoint)
	if err != nil {
		return EndpointStatus{}, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	st := EndpointStatus{
		MemberID: s.Header.GetMemberId(), Leader: s.Leader, Version: s.Version, Revision: s.Header.GetRevision(),
		RaftIndex: s.RaftIndex, RaftAppliedIndex: s.RaftAppliedIndex, IsLearner: s.IsLearner,
		DBSize: s.DbSize, DBSizeInUse: s.DbSizeInUse, StorageVersion: s.StorageVersion,
	}
	if d := s.DowngradeInfo; d != nil && d.Enabled {
		st.DowngradeTarget = d.TargetVersion
	}
	for _, msg := range s.Errors {
		// etcd lists the cluster's alarms among a member's errors (AlarmMember.String()).
		if strings.Contains(msg, "alarm:") {
			st.Alarms = append(st.Alarms, msg)
		} else {
			st.Errors = append(st.Errors, msg)
		}
	}
	return st, nil
}

func (e *etcdClient) AuthEnabled(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.c.AuthStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the authentication status: %w", err)
	}
	return resp.Enabled, nil
}

func (e *etcdClient) EnableAuth(ctx context.Context) error {
	user, password := e.access.Username, e.access.Password
	if user == "" || password == "" {
		return errors.New("enabling authentication: no user name or password")
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	_, err := e.c.UserAdd(ctx, user, password)
	if errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		_, err = e.c.UserChangePassword(ctx, user, password)
	}
	if err != nil {
		return fmt.Errorf("adding etcd user %s: %w", user, err)
	}
	// Granting a role the user has is not an error in etcd.
	if _, err := e.c.UserGrantRole(ctx, user, rootRole); err != nil {
		return fmt.Errorf("granting etcd user %s the %s role: %w", user, rootRole, err)
	}
	if _, err := e.c.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enabling authentication: %w", err)
	}
	return nil
}

// rootRole is etcd's built-in role that may do everything (membership, snapshots, auth).
const rootRole = "root"

func (e *etcdClient) Close() error { return e.c.Close() }

// retryable reports whether etcd refused a membership call for now: its quorum protection
// ("unhealthy cluster") or a learner that received the call.
func retryable(err error) bool {
	return errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, errNotSupportedForLearner)
}

var errNotSupportedForLearner = rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)
