package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// removeCluster plays etcd's membership API for Remove: the removal answers removeErr and
// commits or not; the member list then shows it.
type removeCluster struct {
	clientv3.Cluster
	removeErr error
	committed bool
	listErr   error
}

func (f *removeCluster) MemberRemove(context.Context, uint64) (*clientv3.MemberRemoveResponse, error) {
	return nil, f.removeErr
}

func (f *removeCluster) MemberList(context.Context, ...clientv3.OpOption) (*clientv3.MemberListResponse, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	members := []*pb.Member{{ID: 1, Name: "c-0"}, {ID: 3, Name: "c-2"}}
	if !f.committed {
		members = append(members, &pb.Member{ID: 2, Name: "c-1"})
	}
	return &clientv3.MemberListResponse{Members: members}, nil
}

// TestRemoveFindsOutWhetherItCommitted: a removal whose answer was lost (the member that served
// it was the one removed and stopped first: "server stopped"; or etcd called the cluster
// unhealthy) is a success when a linearizable member list lacks the member, and "not ready,
// try again" when the member is still listed or the list cannot be read. Before, it was always
// "not ready", and the caller, finding the member gone on its next pass, never emitted the
// replacement's event (TestCorruptMemberReplaced in CI).
func TestRemoveFindsOutWhetherItCommitted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		removeErr error
		committed bool
		listErr   error
		want      error // nil, ErrNotReadyForChange, or another error
	}{
		{"answered", nil, true, nil, nil},
		{"server stopped, committed", rpctypes.ErrStopped, true, nil, nil},
		{"server stopped, not committed", rpctypes.ErrStopped, false, nil, ErrNotReadyForChange},
		{"server stopped, list unreadable", rpctypes.ErrStopped, true, errors.New("no leader"), ErrNotReadyForChange},
		{"unhealthy cluster, not committed", rpctypes.ErrUnhealthy, false, nil, ErrNotReadyForChange},
		{"already removed", rpctypes.ErrMemberNotFound, true, nil, nil},
		{"refused", rpctypes.ErrPermissionDenied, false, nil, rpctypes.ErrPermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &etcdClient{c: &clientv3.Client{Cluster: &removeCluster{removeErr: tc.removeErr, committed: tc.committed, listErr: tc.listErr}}, timeout: time.Second}
			err := e.Remove(context.Background(), 2)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Remove = %v, want %v", err, tc.want)
			}
		})
	}
}
