package etcdcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// fakeEtcd is an in-memory etcd membership for envtest, where no pod ever runs: a member
// "starts" once its pod runs (the test's fake kubelet marks pods Running), and answers
// status unless the test killed it.
//
// Members advertise client URLs nobody can reach (advertisedURL): the operator must dial the
// URLs it computes for its own pods. Tests can make the member list serializable only, change
// the cluster ID, or make another member answer at a member's URL.
type fakeEtcd struct {
	mu      sync.Mutex
	members []cluster.Member
	nextID  uint64
	dead    map[string]bool
	// serializable makes MemberList answer one member's view only.
	serializable bool
	// hang makes MemberList wait until its context ends (at most hangCap), as a request to a
	// member killed while it answers waits for its timeout.
	hang bool
	// hanging counts the MemberList calls waiting in hang.
	hanging   int
	clusterID uint64
	// impostor: member name -> the member ID that answers Status at that member's URL.
	impostor map[string]uint64
	// dialed are all the URLs the operator connected to or asked for status.
	dialed map[string]bool

	// Storage upkeep: each member's database file and in-use bytes (by name; unset: 20480 and
	// 16384), the active alarms, the in-use bytes every member has after a compaction
	// (compactTo, 0: unchanged), and the members defragmented, in order.
	db          map[string][2]int64
	alarms      []cluster.Alarm
	compactTo   int64
	compactions int
	defragged   []string
	// leaderMoves are the members leadership was moved to, in order.
	leaderMoves []uint64
	// leaderless makes every member answer without a leader (quorum lost), at its raftIndex.
	leaderless bool
	raftIndex  map[string]uint64
	// hashes are the members' key-value hashes by name (HashKV; unset: 7, the same for all).
	hashes map[string]uint32

	// Authentication: whether it is on, the password etcd knows for root (set by EnableAuth),
	// and the Access of the last client the operator made.
	authOn       bool
	rootPassword string
	access       etcdaccess.Access
}

func newFakeEtcd() *fakeEtcd {
	return &fakeEtcd{nextID: 100, dead: map[string]bool{}, clusterID: 0xc1, impostor: map[string]uint64{}, dialed: map[string]bool{}, db: map[string][2]int64{}}
}

// advertisedURL is what a fake member advertises: never to be dialed.
func advertisedURL(name string) string { return "http://" + name + ".advertised.invalid:2379" }

// set changes the fake under its lock.
func (f *fakeEtcd) set(change func(f *fakeEtcd)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeEtcd) dialedURLs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for u := range f.dialed {
		out = append(out, u)
	}
	return out
}

func hostPod(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return strings.SplitN(u.Hostname(), ".", 2)[0]
}

// connect is the ClientFactory: the endpoints are the client URLs of the running pods.
func (f *fakeEtcd) connect(cfg cluster.Config) (cluster.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.access = cfg.Access
	if f.authOn && (cfg.Access.Username != "root" || cfg.Access.Password != f.rootPassword) {
		return nil, fmt.Errorf("connecting: %w", rpctypes.ErrAuthFailed)
	}
	running := map[string]string{}
	for _, ep := range cfg.Endpoints {
		running[hostPod(ep)] = ep
		f.dialed[ep] = true
	}
	if len(f.members) == 0 && len(cfg.Endpoints) > 0 { // the seed's pod runs: it forms the cluster
		f.nextID++
		f.members = append(f.members, cluster.Member{ID: f.nextID, PeerURLs: []string{"http://" + strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoints[0], "https://"), "http://")}})
	}
	for i, m := range f.members {
		if _, ok := running[m.PodName()]; ok && !m.Started() {
			f.members[i].Name, f.members[i].ClientURLs = m.PodName(), []string{advertisedURL(m.PodName())}
		}
	}
	return &fakeConn{f: f, running: running}, nil
}

func (f *fakeEtcd) kill(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.dead[n] = true
	}
}

// isDead reports whether the member of pod name was killed.
func (f *fakeEtcd) isDead(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead[name]
}

func (f *fakeEtcd) list() []cluster.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cluster.Member(nil), f.members...)
}

type fakeConn struct {
	f       *fakeEtcd
	running map[string]string
}

func (c *fakeConn) alive(name string) bool { _, ok := c.running[name]; return ok && !c.f.dead[name] }

// hangCap bounds a hung MemberList: longer than any bound a test sets on an abandoned pass.
const hangCap = 20 * time.Second

func (c *fakeConn) MemberList(ctx context.Context) (cluster.Membership, error) {
	c.f.mu.Lock()
	hang := c.f.hang
	c.f.mu.Unlock()
	if hang {
		c.f.set(func(f *fakeEtcd) { f.hanging++ })
		defer c.f.set(func(f *fakeEtcd) { f.hanging-- })
		select {
		case <-ctx.Done():
			return cluster.Membership{}, ctx.Err()
		case <-time.After(hangCap):
			return cluster.Membership{}, errors.New("request timed out")
		}
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	for _, m := range c.f.members {
		if m.Started() && c.alive(m.Name) {
			return cluster.Membership{Members: append([]cluster.Member(nil), c.f.members...), ClusterID: c.f.clusterID, Linearizable: !c.f.serializable}, nil
		}
	}
	return cluster.Membership{}, errors.New("no member answers")
}

func (c *fakeConn) AddLearner(_ context.Context, peerURL string) (cluster.Member, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.nextID++
	m := cluster.Member{ID: c.f.nextID, PeerURLs: []string{peerURL}, IsLearner: true}
	c.f.members = append(c.f.members, m)
	return m, nil
}

func (c *fakeConn) Promote(_ context.Context, id uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	for i := range c.f.members {
		if c.f.members[i].ID == id {
			c.f.members[i].IsLearner = false
		}
	}
	return nil
}

func (c *fakeConn) Remove(_ context.Context, id uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	var keep []cluster.Member
	for _, m := range c.f.members {
		if m.ID != id {
			keep = append(keep, m)
		}
	}
	c.f.members = keep
	return nil
}

// Status answers at the URL of a running pod (the URLs connect was given) for the member of
// that name, or for the impostor the test put there.
func (c *fakeConn) Status(_ context.Context, endpoint string) (cluster.EndpointStatus, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.dialed[endpoint] = true
	name := hostPod(endpoint)
	for _, m := range c.f.members {
		if m.Started() && m.Name == name && c.running[name] == endpoint && c.alive(m.Name) {
			id := m.ID
			if other, ok := c.f.impostor[name]; ok {
				id = other
			}
			st := cluster.EndpointStatus{MemberID: id, Leader: c.f.members[0].ID, Version: "3.6.16", IsLearner: m.IsLearner, DBSize: 20480, DBSizeInUse: 16384, Revision: 1000}
			if db, ok := c.f.db[name]; ok {
				st.DBSize, st.DBSizeInUse = db[0], db[1]
			}
			if c.f.leaderless {
				st.Leader, st.RaftIndex, st.Errors = 0, c.f.raftIndex[name], []string{"etcdserver: no leader"}
			}
			for _, a := range c.f.alarms {
				st.Alarms = append(st.Alarms, fmt.Sprintf("memberID:%d alarm:%s ", a.MemberID, a.Type))
			}
			return st, nil
		}
	}
	return cluster.EndpointStatus{}, errors.New("unreachable")
}

// HashKV answers like Status: at a running pod's URL, for the member of that name.
func (c *fakeConn) HashKV(ctx context.Context, endpoint string, rev int64) (cluster.KVHash, error) {
	st, err := c.Status(ctx, endpoint)
	if err != nil {
		return cluster.KVHash{}, err
	}
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	h, ok := c.f.hashes[hostPod(endpoint)]
	if !ok {
		h = 7
	}
	return cluster.KVHash{MemberID: st.MemberID, Revision: cmp.Or(rev, st.Revision), CompactRevision: 5, Hash: h}, nil
}

// EnableDowngrade and CancelDowngrade are refused: the fake's members always run 3.6.16 (a
// downgrade is tested on real members, test/e2e/etcdcluster).
func (c *fakeConn) EnableDowngrade(_ context.Context, _, version string) error {
	return fmt.Errorf("fake etcd: no downgrade to %s", version)
}

func (c *fakeConn) CancelDowngrade(context.Context, string) error {
	return errors.New("fake etcd: no downgrade to cancel")
}

func (c *fakeConn) Alarms(context.Context) ([]cluster.Alarm, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return append([]cluster.Alarm(nil), c.f.alarms...), nil
}

func (c *fakeConn) Disarm(_ context.Context, _ string, a cluster.Alarm) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	var keep []cluster.Alarm
	for _, x := range c.f.alarms {
		if x != a {
			keep = append(keep, x)
		}
	}
	c.f.alarms = keep
	return nil
}

func (c *fakeConn) Compact(context.Context, int64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.compactions++
	if c.f.compactTo > 0 {
		for name, db := range c.f.db {
			c.f.db[name] = [2]int64{db[0], min(db[1], c.f.compactTo)}
		}
	}
	return nil
}

func (c *fakeConn) Defragment(_ context.Context, endpoint string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	name := hostPod(endpoint)
	if c.running[name] != endpoint || !c.alive(name) {
		return errors.New("unreachable")
	}
	if db, ok := c.f.db[name]; ok {
		c.f.db[name] = [2]int64{db[1], db[1]}
	}
	c.f.defragged = append(c.f.defragged, name)
	return nil
}

// MoveLeader makes member to the leader (the first member) when asked at the leader's URL.
func (c *fakeConn) MoveLeader(_ context.Context, leaderEndpoint string, to uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if len(c.f.members) == 0 || hostPod(leaderEndpoint) != c.f.members[0].Name {
		return errors.New("not the leader")
	}
	for i, m := range c.f.members {
		if m.ID == to {
			c.f.members[0], c.f.members[i] = c.f.members[i], c.f.members[0]
			c.f.leaderMoves = append(c.f.leaderMoves, to)
			return nil
		}
	}
	return errors.New("no such member")
}

func (c *fakeConn) AuthEnabled(context.Context) (bool, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.authOn, nil
}

func (c *fakeConn) EnableAuth(context.Context) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.authOn, c.f.rootPassword = true, c.f.access.Password
	return nil
}

func (c *fakeConn) Close() error { return nil }

// fakeAlarmProbe answers the alarm poller's /health for the fake of the URL's namespace
// (http://c-0.c.<ns>.svc:2381), as etcd would: the first raised alarm, if any.
func fakeAlarmProbe(_ context.Context, baseURL string) (string, error) {
	f := fakeFor(cluster.Config{Endpoints: []string{baseURL}})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.alarms) == 0 {
		return "", nil
	}
	return "ALARM " + f.alarms[0].Type, nil
}
