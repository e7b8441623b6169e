// Package keyspace makes the keyspaces that real etcd clients leave behind, for tests of
// backup, hash and restore: every entry runs a real client (clientv3 and its concurrency
// package, or a real kube-apiserver) against a real etcd started by the test, and returns that
// etcd, still running, so the test can back it up and compare a restore with it key by key at
// the backup's revision (Compare).
package keyspace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// Source is a running etcd holding a keyspace a real client wrote.
type Source struct {
	// Endpoint is its client URL.
	Endpoint string
	// Username and Password are set when authentication is on (user root).
	Username, Password string
	// Client reads it, with the credentials.
	Client *clientv3.Client
	// Etcd is the process (nil when another harness runs it, as envtest does).
	Etcd *snapshottest.Etcd
	// Login, when set, makes the clients of other users and sessions (a harness that dials
	// through its own resolver); clientv3.New at Endpoint otherwise.
	Login func(user, password string) *clientv3.Client

	// sessions are the clients of the concurrency entry's lock and election sessions.
	sessions []*clientv3.Client
}

// StopSessions closes the clients of the lock and election sessions the corpus left, as an
// application is stopped before its etcd is restored in place. Their keys and leases stay (a
// closed client revokes nothing). A session left running acts on the restored cluster: a
// clientv3 Mutex still waiting gets a compacted watch there and deletes its own key.
func (s *Source) StopSessions() {
	for _, cli := range s.sessions {
		_ = cli.Close()
	}
	s.sessions = nil
}

// Entry is one kind of keyspace.
type Entry struct {
	Name string
	// Fill writes it into the etcd s reaches (an entry that turns authentication on leaves s
	// with root's client and credentials).
	Fill func(t *testing.T, s *Source)
}

// Corpus is every entry that needs nothing but etcd (a kube-apiserver's keyspace is made by
// the tests that run one). FillAll writes them all into one etcd, in this order.
func Corpus() []Entry {
	return []Entry{
		{Name: "leases", Fill: Leases},
		{Name: "concurrency", Fill: Concurrency},
		{Name: "history", Fill: History},
		{Name: "auth", Fill: Auth},
	}
}

// FillAll writes every entry of the corpus into the etcd s reaches (authentication last).
func FillAll(t *testing.T, s *Source) {
	t.Helper()
	for _, e := range Corpus() {
		e.Fill(t, s)
	}
}

// Run runs test once per corpus entry and etcd release (3.6 and 3.5), as a subtest named
// <version>/<entry>, with the entry's source running on that release (binDir is its
// binaries' directory).
func Run(t *testing.T, test func(t *testing.T, binDir string, src *Source)) {
	t.Helper()
	for _, version := range []string{snapshottest.Version, snapshottest.OldVersion} {
		binDir := snapshottest.BinDirOf(version)
		for _, e := range Corpus() {
			t.Run(version+"/"+e.Name, func(t *testing.T) {
				snapshottest.BinIn(t, binDir, "etcd")
				s := start(t, binDir)
				e.Fill(t, s)
				test(t, binDir, s)
			})
		}
	}
}

func start(t *testing.T, binDir string) *Source {
	t.Helper()
	e := snapshottest.NewEtcd(t, "default", nil)
	e.Dir = binDir
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	return &Source{Endpoint: e.Endpoint, Client: e.Client(t), Etcd: e}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// errOf drops a call's result and keeps its error.
func errOf[T any](_ T, err error) error { return err }

// Leases is a service registry: 40 instances, each a key on its own kept-alive lease, 200 keys
// sharing one long lease, keys on a lease that expires (and is revoked) before the backup, and
// a live lease with no key.
func Leases(t *testing.T, s *Source) {
	cli, c := s.Client, ctx(t)
	for i := range 40 {
		l, err := cli.Grant(c, 300)
		ok(t, err)
		ok(t, errOf(cli.Put(c, fmt.Sprintf("/registry/services/svc-%02d/instance", i), fmt.Sprintf(`{"addr":"10.0.0.%d:8080"}`, i), clientv3.WithLease(l.ID))))
		ch, err := cli.KeepAlive(t.Context(), l.ID)
		ok(t, err)
		go func() {
			for range ch { //nolint:revive // drain the keep-alive answers until the test ends
			}
		}()
	}
	shared, err := cli.Grant(c, 3600)
	ok(t, err)
	for i := range 200 {
		ok(t, errOf(cli.Put(c, fmt.Sprintf("/sessions/shared/%03d", i), strings.Repeat("s", 64), clientv3.WithLease(shared.ID))))
	}
	// etcd's minimum TTL is 1.5 election timeouts, rounded up: 2 s with the default flags.
	short, err := cli.Grant(c, 2)
	ok(t, err)
	for i := range 10 {
		ok(t, errOf(cli.Put(c, fmt.Sprintf("/ephemeral/%02d", i), "gone soon", clientv3.WithLease(short.ID))))
	}
	ok(t, errOf(cli.Grant(c, 600))) // a lease with no key
	// The short lease expires: its keys are deleted by the leader, a revision each.
	err = poll.Until(c, 200*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		r, err := cli.Get(ctx, "/ephemeral/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err
		}
		return r.Count == 0, fmt.Errorf("the 2 s lease's %d keys still exist", r.Count)
	})
	ok(t, err)
	ok(t, errOf(cli.Put(c, "/plain", "no lease")))
}

// Concurrency is what clientv3/concurrency leaves: held mutexes, a waiting one, and elections
// with a leader and a follower, every key on a session's lease.
func Concurrency(t *testing.T, s *Source) {
	c := ctx(t)
	session := func() *concurrency.Session {
		cli := s.login(t, s.Username, s.Password)
		s.sessions = append(s.sessions, cli)
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
		ok(t, err)
		return sess
	}
	for i := range 5 {
		m := concurrency.NewMutex(session(), fmt.Sprintf("/locks/job-%d", i))
		if err := m.Lock(c); err != nil {
			t.Fatal(err)
		}
	}
	// A second contender waits behind the first holder of job-0: its key is in the keyspace too.
	waiter := concurrency.NewMutex(session(), "/locks/job-0")
	wctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() { _ = waiter.Lock(wctx) }()
	for i := range 3 {
		leader := concurrency.NewElection(session(), fmt.Sprintf("/elections/shard-%d", i))
		if err := leader.Campaign(c, fmt.Sprintf("leader-%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := leader.Proclaim(c, fmt.Sprintf("leader-%d-v2", i)); err != nil {
			t.Fatal(err)
		}
		follower := concurrency.NewElection(session(), fmt.Sprintf("/elections/shard-%d", i))
		go func() { _ = follower.Campaign(wctx, "follower") }()
	}
	// Wait until the waiters' keys are written.
	err := poll.Until(c, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		l, err := s.Client.Get(ctx, "/locks/job-0", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err
		}
		e, err := s.Client.Get(ctx, "/elections/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err
		}
		return l.Count == 2 && e.Count == 6, fmt.Errorf("waiters not queued: %d lock keys, %d election keys", l.Count, e.Count)
	})
	ok(t, err)
}

// AuthPassword is root's password when the Auth entry turns authentication on.
const AuthPassword = "corpus-root-pw"

// Auth is a keyspace with authentication on: root and two users with roles over prefixes, keys
// written as each, one on a lease. Authentication is turned on (root with AuthPassword) unless s
// already authenticates as root.
func Auth(t *testing.T, s *Source) {
	cli, c := s.Client, ctx(t)
	for _, role := range []string{"app-rw", "audit-ro"} {
		ok(t, errOf(cli.RoleAdd(c, role)))
	}
	ok(t, errOf(cli.RoleGrantPermission(c, "app-rw", "/app/", clientv3.GetPrefixRangeEnd("/app/"), clientv3.PermissionType(clientv3.PermReadWrite))))
	ok(t, errOf(cli.RoleGrantPermission(c, "audit-ro", "/", "\x00", clientv3.PermissionType(clientv3.PermRead))))
	ok(t, errOf(cli.UserAdd(c, "app", "app-pw")))
	ok(t, errOf(cli.UserGrantRole(c, "app", "app-rw")))
	ok(t, errOf(cli.UserAdd(c, "auditor", "audit-pw")))
	ok(t, errOf(cli.UserGrantRole(c, "auditor", "audit-ro")))
	if s.Username == "" {
		snapshottest.EnableAuth(t, cli, AuthPassword)
		s.Username, s.Password = "root", AuthPassword
	}

	root := s.login(t, s.Username, s.Password)
	app := s.login(t, "app", "app-pw")
	for i := range 50 {
		ok(t, errOf(app.Put(c, fmt.Sprintf("/app/config/%02d", i), fmt.Sprintf("v%d", i))))
	}
	l, err := app.Grant(c, 600)
	ok(t, err)
	ok(t, errOf(app.Put(c, "/app/leader", "app-0", clientv3.WithLease(l.ID))))
	ok(t, errOf(root.Put(c, "/admin/settings", "root only")))
	s.Client = root
}

func (s *Source) login(t *testing.T, user, password string) *clientv3.Client {
	t.Helper()
	if s.Login != nil {
		return s.Login(user, password)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second, Username: user, Password: password, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// History is a keyspace with a past: a key written 300 times, deleted keys and a key deleted and
// written again, transactions of many operations, values up to 1 MiB, a compaction in the
// middle, and writes after it (including a delete at what becomes the compaction revision).
func History(t *testing.T, s *Source) {
	cli, c := s.Client, ctx(t)
	for i := range 300 {
		ok(t, errOf(cli.Put(c, "/counter", fmt.Sprint(i))))
	}
	for i := range 100 {
		ok(t, errOf(cli.Put(c, fmt.Sprintf("/tmp/%03d", i), "x")))
	}
	ok(t, errOf(cli.Delete(c, "/tmp/", clientv3.WithPrefix())))
	ok(t, errOf(cli.Put(c, "/reborn", "first life")))
	ok(t, errOf(cli.Delete(c, "/reborn")))
	ok(t, errOf(cli.Put(c, "/reborn", "second life")))
	for i := range 20 {
		ops := make([]clientv3.Op, 0, 50)
		for j := range 50 {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/txn/%02d/%02d", i, j), fmt.Sprint(i*j)))
		}
		ok(t, errOf(cli.Txn(c).If(clientv3.Compare(clientv3.Version("/counter"), ">", 0)).Then(ops...).Commit()))
	}
	big := strings.Repeat("L", 1<<20)
	for i := range 3 {
		ok(t, errOf(cli.Put(c, fmt.Sprintf("/large/%d", i), big)))
	}
	ok(t, errOf(cli.Put(c, "/doomed", "deleted at the compaction revision")))
	del, err := cli.Delete(c, "/doomed")
	ok(t, err)
	ok(t, errOf(cli.Compact(c, del.Header.Revision, clientv3.WithCompactPhysical())))
	for i := range 50 {
		ok(t, errOf(cli.Put(c, "/counter", fmt.Sprint(1000+i))))
	}
	ok(t, errOf(cli.Delete(c, "/txn/00/", clientv3.WithPrefix())))
}

// Captured is what a source served at one revision: every key, and the granted TTL of every
// lease a key was attached to.
type Captured struct {
	Revision int64
	KVs      []*mvccpb.KeyValue
	Granted  map[clientv3.LeaseID]int64
}

// Capture reads what src serves at rev (before the source is gone, as an in-place restore
// makes it).
func Capture(t *testing.T, src *clientv3.Client, rev int64) *Captured {
	t.Helper()
	c := ctx(t)
	resp, err := src.Get(c, "\x00", clientv3.WithFromKey(), clientv3.WithRev(rev))
	ok(t, err)
	out := &Captured{Revision: rev, KVs: resp.Kvs, Granted: map[clientv3.LeaseID]int64{}}
	for _, kv := range resp.Kvs {
		id := clientv3.LeaseID(kv.Lease)
		if _, seen := out.Granted[id]; id == 0 || seen {
			continue
		}
		ttl, err := src.TimeToLive(c, id)
		ok(t, err)
		out.Granted[id] = ttl.GrantedTTL
	}
	return out
}

// Compare checks that dst serves at rev exactly what src served there (Capture, then Check).
func Compare(t *testing.T, src, dst *clientv3.Client, rev int64) int {
	t.Helper()
	return Capture(t, src, rev).Check(t, dst)
}

// Check checks that dst serves at the captured revision exactly the captured keys (key, value,
// create and mod revision, version, lease), and that every lease a key is attached to exists in
// dst with the TTL it was granted and its keys. It returns the number of keys compared.
func (want *Captured) Check(t *testing.T, dst *clientv3.Client) int {
	t.Helper()
	return want.CheckAt(t, dst, want.Revision)
}

// CheckAt is Check reading dst at revision rev: a restore that raised the revision
// (--bump-revision) serves the captured keys, with their own revisions, at the raised one.
func (want *Captured) CheckAt(t *testing.T, dst *clientv3.Client, rev int64) int {
	t.Helper()
	c := ctx(t)
	got, err := dst.Get(c, "\x00", clientv3.WithFromKey(), clientv3.WithRev(rev))
	ok(t, err)
	if len(got.Kvs) != len(want.KVs) {
		t.Fatalf("at revision %d the restore serves %d keys, the source %d", rev, len(got.Kvs), len(want.KVs))
	}
	leases := map[clientv3.LeaseID]int64{}
	for i, w := range want.KVs {
		g := got.Kvs[i]
		if string(g.Key) != string(w.Key) || string(g.Value) != string(w.Value) || g.CreateRevision != w.CreateRevision ||
			g.ModRevision != w.ModRevision || g.Version != w.Version || g.Lease != w.Lease {
			t.Fatalf("key %d differs at revision %d:\n restored %q create %d mod %d version %d lease %x (%d value bytes)\n source   %q create %d mod %d version %d lease %x (%d value bytes)",
				i, rev, g.Key, g.CreateRevision, g.ModRevision, g.Version, g.Lease, len(g.Value), w.Key, w.CreateRevision, w.ModRevision, w.Version, w.Lease, len(w.Value))
		}
		if w.Lease != 0 {
			leases[clientv3.LeaseID(w.Lease)]++
		}
	}
	for id, n := range leases {
		r, err := dst.TimeToLive(c, id, clientv3.WithAttachedKeys())
		if err != nil {
			t.Fatalf("restored lease %x (%d keys): %v", id, n, err)
		}
		if granted := want.Granted[id]; r.TTL <= 0 || (granted > 0 && r.GrantedTTL != granted) {
			t.Fatalf("restored lease %x: TTL %d, granted %d; the source granted %d", id, r.TTL, r.GrantedTTL, granted)
		}
		if int64(len(r.Keys)) < n {
			t.Fatalf("restored lease %x has %d keys attached, the source's keys at revision %d name it %d times", id, len(r.Keys), rev, n)
		}
	}
	return len(want.KVs)
}
