package restoreboot

import (
	"context"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// MemberState is what one member reports about the keyspace at a revision.
type MemberState struct {
	// Hash is etcd's HashKV at the revision.
	Hash uint32
	// Keys is the number of keys at the revision, read from this member alone.
	Keys int64
	// Revision is the member's current revision.
	Revision int64
}

// MemberCheck reads one member's keyspace figures at rev. addr, when not empty, is the IP
// address to connect to for endpoint's host (its pod's; see cluster.Config.Addrs).
type MemberCheck func(ctx context.Context, endpoint, addr string, access etcdaccess.Access, rev int64) (MemberState, error)

// Deadlines of one member check. Short: a member that does not answer is asked again on the
// next pass.
const (
	memberDialTimeout = 5 * time.Second
	memberCallTimeout = 10 * time.Second
)

// CheckMember asks the member at endpoint (connecting to addr when set), and only it, for its
// keyspace hash and key count at rev.
func CheckMember(ctx context.Context, endpoint, addr string, access etcdaccess.Access, rev int64) (MemberState, error) {
	cfg := access.ClientConfig([]string{endpoint}, memberDialTimeout)
	if u, err := url.Parse(endpoint); err == nil && addr != "" {
		cfg.DialOptions = append(cfg.DialOptions, etcdaccess.DialAt(map[string]string{u.Hostname(): addr}))
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return MemberState{}, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	h, err := cli.HashKV(ctx, endpoint, rev)
	if err != nil {
		return MemberState{}, fmt.Errorf("HashKV of %s at revision %d: %w", endpoint, rev, err)
	}
	// Serializable: this member's own store answers, not the leader's.
	n, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(rev), clientv3.WithSerializable())
	if err != nil {
		return MemberState{}, fmt.Errorf("counting keys of %s at revision %d: %w", endpoint, rev, err)
	}
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return MemberState{}, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	return MemberState{Hash: h.Hash, Keys: n.Count, Revision: st.Header.Revision}, nil
}
