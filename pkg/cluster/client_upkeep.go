package cluster

// The storage's upkeep (alarms, compaction, hashes, defragmentation), leadership and etcd's
// downgrade, and the calls that must reach one member: the rest of etcdClient (client.go).

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func (e *etcdClient) Alarms(ctx context.Context) ([]Alarm, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.c.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing alarms: %w", err)
	}
	out := make([]Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

func (e *etcdClient) Disarm(ctx context.Context, endpoint string, a Alarm) error {
	t, ok := pb.AlarmType_value[a.Type]
	if !ok {
		return fmt.Errorf("disarming alarm %s of member %x: unknown alarm type", a.Type, a.MemberID)
	}
	via := e
	if endpoint != "" {
		one, err := e.one(endpoint)
		if err != nil {
			return err
		}
		defer one.Close()
		via = one
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if _, err := via.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(t)}); err != nil {
		return fmt.Errorf("disarming alarm %s of member %x: %w", a.Type, a.MemberID, err)
	}
	return nil
}

func (e *etcdClient) EnableDowngrade(ctx context.Context, endpoint, version string) error {
	return e.through(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.Downgrade(ctx, clientv3.DowngradeValidate, version)
		if errors.Is(err, rpctypes.ErrDowngradeInProcess) {
			// Enabled already (a member that had not applied it yet reported none): there is
			// one step to a lower minor release, so it is this one.
			return nil
		}
		if err != nil {
			return fmt.Errorf("etcd refuses a downgrade to %s: %w", version, err)
		}
		if _, err := c.Downgrade(ctx, clientv3.DowngradeEnable, version); err != nil {
			return fmt.Errorf("enabling the downgrade to %s: %w", version, err)
		}
		return nil
	})
}

func (e *etcdClient) CancelDowngrade(ctx context.Context, endpoint string) error {
	return e.through(ctx, endpoint, func(ctx context.Context, c *clientv3.Client) error {
		if _, err := c.Downgrade(ctx, clientv3.DowngradeCancel, ""); err != nil && !errors.Is(err, rpctypes.ErrNoInflightDowngrade) {
			return fmt.Errorf("cancelling the downgrade: %w", err)
		}
		return nil
	})
}

func (e *etcdClient) Compact(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	_, err := e.c.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compacting to revision %d: %w", rev, err)
	}
	return nil
}

func (e *etcdClient) HashKV(ctx context.Context, endpoint string, rev int64) (KVHash, error) {
	ctx, cancel := context.WithTimeout(ctx, HashKVTimeout)
	defer cancel()
	h, err := e.c.HashKV(ctx, endpoint, rev)
	if err != nil {
		return KVHash{}, fmt.Errorf("hash of %s at revision %d: %w", endpoint, rev, err)
	}
	// HashRevision is the revision hashed; older releases leave it 0: the one asked for then.
	hashed := h.HashRevision
	if hashed == 0 {
		hashed = cmp.Or(rev, h.Header.GetRevision())
	}
	return KVHash{MemberID: h.Header.GetMemberId(), Revision: hashed, CompactRevision: h.CompactRevision, Hash: h.Hash}, nil
}

func (e *etcdClient) Defragment(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, DefragmentTimeout)
	defer cancel()
	if _, err := e.c.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragmenting %s: %w", endpoint, err)
	}
	return nil
}

func (e *etcdClient) MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error {
	// etcd takes MoveLeader only from its leader: a client of that one endpoint.
	return e.through(ctx, leaderEndpoint, func(ctx context.Context, c *clientv3.Client) error {
		if _, err := c.MoveLeader(ctx, to); err != nil {
			return fmt.Errorf("moving leadership from %s to member %x: %w", leaderEndpoint, to, err)
		}
		return nil
	})
}

// through calls f with a client of the member at endpoint alone and a context bounded by the
// request timeout.
func (e *etcdClient) through(ctx context.Context, endpoint string, f func(context.Context, *clientv3.Client) error) error {
	one, err := e.one(endpoint)
	if err != nil {
		return err
	}
	defer one.Close()
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	return f(ctx, one.c)
}

// one is a client of the member at endpoint alone, with e's settings; the caller closes it.
func (e *etcdClient) one(endpoint string) (*etcdClient, error) {
	cfg := e.cfg
	cfg.Endpoints = []string{endpoint}
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return c.(*etcdClient), nil
}
