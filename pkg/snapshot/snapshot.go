// Package snapshot takes a verified backup of an etcd cluster: it picks one healthy member with
// the highest revision, streams its snapshot straight into a backend.Backend through a
// VerifyingReader (so a corrupt or cut-off stream aborts the upload), and reports what it stored.
//
// It imports clientv3 and pkg/backend but not controller-runtime; the backup controller maps its
// errors to condition reasons with the sentinel errors below.
package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// Errors the controller classifies; match with errors.Is.
var (
	// ErrNoHealthyMember: no endpoint answered Status as a healthy voting member.
	ErrNoHealthyMember = errors.New("no healthy etcd member reachable")
	// ErrStream: the snapshot stream from etcd failed (member died, connection cut).
	ErrStream = errors.New("snapshot stream failed")
	// ErrStorage: the object store refused or failed the upload.
	ErrStorage = errors.New("uploading snapshot failed")
	// ErrTimeout: the backup did not finish within its timeout.
	ErrTimeout = errors.New("backup timed out")
)

// Timeout defaults: at least MinTimeout, otherwise three times the time the database takes at
// TimeoutThroughput (measured streams run at 150 MB/s on loopback; a slow remote store at a
// few MB/s still finishes).
const (
	MinTimeout         = 10 * time.Minute
	TimeoutThroughput  = 5 << 20 // bytes per second
	timeoutSafetyRatio = 3
)

// DefaultTimeout is the timeout of a backup of a database of dbSize bytes when the user set none.
func DefaultTimeout(dbSize int64) time.Duration {
	return max(MinTimeout, time.Duration(dbSize/TimeoutThroughput*timeoutSafetyRatio)*time.Second)
}

// Config says which cluster to back up and how.
type Config struct {
	// Endpoints are the members' client URLs.
	Endpoints []string
	// Addrs maps an endpoint's host to the IP address to dial for it (a member pod's IP that
	// the caller verified); hosts not in it are resolved through DNS. See etcdaccess.DialAt.
	Addrs map[string]string
	// Access is the client certificate and the etcd credentials (etcd serves snapshots to
	// users with the root role only when authentication is on).
	Access etcdaccess.Access
	// DialTimeout bounds connecting to a member; RequestTimeout bounds each Status call.
	DialTimeout    time.Duration
	RequestTimeout time.Duration
	// Timeout bounds the snapshot and upload; 0 means DefaultTimeout of the member's DbSize.
	Timeout time.Duration
	// Key names the object from the chosen member's revision and the start time.
	Key func(rev int64, start time.Time) string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// CheckHashKV checks every backup against the live cluster once it is stored: the object
	// is read back, its keyspace hash computed and compared with the member's HashKV at the
	// snapshot's revision (see checkHashKV). A difference fails the backup with
	// ErrHashMismatch and deletes the object; a check that cannot compare is recorded in
	// Result.HashKV and the backup stands.
	CheckHashKV bool
	// TempDir is where the check reads the object back to (it needs the object's size in free
	// space, per backup running at once); "" means os.TempDir().
	TempDir string
}

// Member is what Status reported about one member.
type Member struct {
	Endpoint string
	ID       uint64
	// ClusterID is the cluster ID in the member's Status response header.
	ClusterID uint64
	Revision  int64
	Version   string
	DbSize    int64
	IsLeader  bool
	Err       error
}

// Result describes a stored, verified backup.
type Result struct {
	// Key is the object key in the backend.
	Key string
	// Member is the endpoint the snapshot came from, with its Status.
	Member Member
	// Size and SHA256 describe the stored object, etcd's trailing checksum included.
	Size   int64
	SHA256 string
	// Start is when the snapshot was requested; Duration how long snapshot and upload took.
	Start    time.Time
	Duration time.Duration
	// Timeout is the timeout that applied.
	Timeout time.Duration
	// HashKV is the outcome of the check against the live member, when Config.CheckHashKV.
	HashKV HashKVCheck
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) client(endpoints []string) (*clientv3.Client, error) {
	ccfg := c.Access.ClientConfig(endpoints, c.DialTimeout)
	if len(c.Addrs) > 0 {
		ccfg.DialOptions = append(ccfg.DialOptions, etcdaccess.DialAt(c.Addrs))
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("%w: creating etcd client for %v: %w", ErrNoHealthyMember, endpoints, err)
	}
	return cli, nil
}

// Members asks every endpoint for its Status, each call under RequestTimeout. Members that did
// not answer carry Err.
func Members(ctx context.Context, cfg *Config) ([]Member, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrNoHealthyMember)
	}
	cli, err := cfg.client(cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	members := make([]Member, 0, len(cfg.Endpoints))
	for _, ep := range cfg.Endpoints {
		m := Member{Endpoint: ep}
		sctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		resp, err := cli.Status(sctx, ep)
		cancel()
		switch {
		case err != nil:
			m.Err = err
		case resp.IsLearner:
			m.Err = errors.New("member is a learner")
		default:
			m.ID, m.Revision, m.Version, m.DbSize = resp.Header.MemberId, resp.Header.Revision, resp.Version, resp.DbSize
			m.ClusterID = resp.Header.ClusterId
			m.IsLeader = resp.Leader == resp.Header.MemberId
			if len(resp.Errors) > 0 {
				m.Err = fmt.Errorf("member reports errors: %v", resp.Errors)
			}
		}
		members = append(members, m)
	}
	return members, nil
}

// Pick returns the healthy member with the highest revision; on a tie it prefers a follower (a
// snapshot loads the member that serves it) and then the first endpoint.
func Pick(members []Member) (Member, error) {
	var healthy []Member
	var errs []error
	for _, m := range members {
		if m.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Endpoint, m.Err))
			continue
		}
		healthy = append(healthy, m)
	}
	if len(healthy) == 0 {
		return Member{}, fmt.Errorf("%w: %w", ErrNoHealthyMember, errors.Join(errs...))
	}
	slices.SortStableFunc(healthy, func(a, b Member) int {
		if c := cmp.Compare(b.Revision, a.Revision); c != 0 {
			return c
		}
		return cmp.Compare(btoi(a.IsLeader), btoi(b.IsLeader))
	})
	return healthy[0], nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Take backs up the cluster into b: it picks a member, streams its snapshot through a
// VerifyingReader and a read-ahead into b.Put under cfg.Key(revision, start), and returns what
// was stored. On any error no new object is visible under the key (the backend aborts the
// upload, or the check against the live member deletes what it found bad).
func Take(ctx context.Context, cfg *Config, b backend.Backend) (Result, error) {
	members, err := Members(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	m, err := Pick(members)
	if err != nil {
		return Result{}, err
	}
	return TakeFrom(ctx, cfg, m, b)
}

// TakeFrom streams a snapshot of member m (from Members and Pick) into b and, with
// cfg.CheckHashKV, checks the stored object against m's HashKV (checkHashKV).
func TakeFrom(ctx context.Context, cfg *Config, m Member, b backend.Backend) (Result, error) {
	res := Result{Member: m, Start: cfg.now(), Timeout: cfg.Timeout}
	if res.Timeout <= 0 {
		res.Timeout = DefaultTimeout(m.DbSize)
	}
	res.Key = cfg.Key(m.Revision, res.Start)
	ctx, cancel := context.WithTimeout(ctx, res.Timeout)
	defer cancel()

	cli, err := cfg.client([]string{m.Endpoint})
	if err != nil {
		return res, err
	}
	defer cli.Close()
	snap, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return res, classify(ctx, res.Timeout, fmt.Errorf("%w: requesting snapshot from %s: %w", ErrStream, m.Endpoint, err))
	}
	vr := NewVerifyingReader(&streamReader{r: snap.Snapshot})
	ra := newReadAhead(vr)
	// Closing the stream first ends a read of it the read-ahead may be blocked in.
	defer func() { _ = snap.Snapshot.Close(); ra.Close() }()
	if err := b.Put(ctx, res.Key, ra); err != nil {
		if !errors.Is(err, ErrStream) && !errors.Is(err, ErrChecksumMismatch) && !errors.Is(err, ErrTruncated) {
			err = fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return res, classify(ctx, res.Timeout, fmt.Errorf("backing up %s to %s: %w", m.Endpoint, res.Key, err))
	}
	if !ra.EOF() {
		// A backend that stopped reading before EOF must not count as a verified backup.
		_ = b.Delete(context.WithoutCancel(ctx), res.Key)
		return res, fmt.Errorf("%w: the backend stored %s before the snapshot stream ended", ErrStorage, res.Key)
	}
	res.Size, res.SHA256 = vr.Size(), vr.SHA256()
	res.Duration = cfg.now().Sub(res.Start)
	if !cfg.CheckHashKV {
		return res, nil
	}
	if res.HashKV, err = checkHashKV(ctx, cfg, cli, m, b, res.Key); err != nil {
		// The object was written by this very call (Put replaced whatever was under the key)
		// and is known bad: leaving it would offer a restore a backup that does not hold the
		// cluster's keyspace.
		if derr := b.Delete(context.WithoutCancel(ctx), res.Key); derr != nil {
			err = fmt.Errorf("%w; deleting it failed too: %w", err, derr)
		}
		return res, fmt.Errorf("checking %s against %s: %w", res.Key, m.Endpoint, err)
	}
	return res, nil
}

// classify marks err as a timeout when the backup's deadline passed. ctx.Err() alone is not
// enough: gRPC reports DeadlineExceeded as soon as the clock passes the deadline (the server
// cancels the stream on the propagated grpc-timeout), which can be before the context's own
// timer has fired and set ctx.Err().
func classify(ctx context.Context, timeout time.Duration, err error) error {
	if deadlinePassed(ctx) && !errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w after %s: %w", ErrTimeout, timeout, err)
	}
	return err
}

func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// streamReader marks the snapshot stream's own errors with ErrStream.
type streamReader struct{ r io.Reader }

func (s *streamReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %w", ErrStream, err)
	}
	return n, err
}
