package etcdcluster

import (
	"strings"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

func TestMemberDetails(t *testing.T) {
	members := []cluster.Member{{ID: 0xa, Name: "c-1"}, {ID: 0xb, Name: "c-0"}, {ID: 0xc, Name: "c-2"}, {ID: 0xd, PeerURLs: []string{"http://c-3.c.ns.svc:2380"}, IsLearner: true}}
	for _, tc := range []struct {
		name       string
		status     map[uint64]cluster.EndpointStatus
		probeErrs  map[uint64]string
		wantLeader string
		wantRoles  string // in name order c-0, c-1, c-2, c-3
		wantErrors string
	}{{
		name: "all answer, c-1 leads",
		status: map[uint64]cluster.EndpointStatus{
			0xa: {MemberID: 0xa, Leader: 0xa, Version: "3.6.16", DBSize: 100, DBSizeInUse: 60},
			0xb: {MemberID: 0xb, Leader: 0xa, Version: "3.6.16", DBSize: 100, DBSizeInUse: 60},
			0xc: {MemberID: 0xc, Leader: 0xa, Version: "3.6.16", Errors: []string{"NOSPACE"}},
		},
		probeErrs:  map[uint64]string{0xd: "added to the member list, not started yet"},
		wantLeader: "c-1", wantRoles: "Follower,Leader,Follower,Learner", wantErrors: ",,NOSPACE,added to the member list, not started yet",
	}, {
		name: "leader down: the others still name it",
		status: map[uint64]cluster.EndpointStatus{
			0xb: {MemberID: 0xb, Leader: 0xa},
			0xc: {MemberID: 0xc, Leader: 0xa},
		},
		probeErrs:  map[uint64]string{0xa: "status of http://c-1: context deadline exceeded"},
		wantLeader: "c-1", wantRoles: "Follower,Leader,Follower,Learner", wantErrors: ",status of http://c-1: context deadline exceeded,,did not answer",
	}, {
		name: "two claim leadership during an election: the one further ahead",
		status: map[uint64]cluster.EndpointStatus{
			0xa: {MemberID: 0xa, Leader: 0xa, RaftIndex: 10},
			0xc: {MemberID: 0xc, Leader: 0xc, RaftIndex: 12},
		},
		wantLeader: "c-2", wantRoles: "Unknown,Follower,Leader,Learner", wantErrors: "did not answer,,,did not answer",
	}, {
		name:       "nobody answers",
		wantLeader: "", wantRoles: "Unknown,Unknown,Unknown,Learner", wantErrors: "did not answer,did not answer,did not answer,did not answer",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observation{probeErrs: tc.probeErrs}
			obs.Members, obs.Status = members, tc.status
			if obs.probeErrs == nil {
				obs.probeErrs = map[uint64]string{}
			}
			details, leader := memberDetails(obs, nil)
			var roles, errs, names []string
			for _, d := range details {
				names, roles, errs = append(names, d.Name), append(roles, string(d.Role)), append(errs, d.LastError)
				if d.Healthy != (d.LastError == "") {
					t.Errorf("%s: healthy %v with lastError %q", d.Name, d.Healthy, d.LastError)
				}
			}
			if got := strings.Join(names, ","); got != "c-0,c-1,c-2,c-3" {
				t.Fatalf("names %s", got)
			}
			if leader != tc.wantLeader || strings.Join(roles, ",") != tc.wantRoles || strings.Join(errs, ",") != tc.wantErrors {
				t.Fatalf("leader %q roles %v errors %q, want %q %s %q", leader, roles, strings.Join(errs, ","), tc.wantLeader, tc.wantRoles, tc.wantErrors)
			}
		})
	}
	t.Run("sizes and ids", func(t *testing.T) {
		obs := &observation{probeErrs: map[uint64]string{}}
		obs.Members = members[:1]
		obs.Status = map[uint64]cluster.EndpointStatus{0xa: {MemberID: 0xa, Leader: 0xa, Version: "3.5.21", DBSize: 4096, DBSizeInUse: 1024}}
		details, _ := memberDetails(obs, nil)
		want := etcdv1beta2.MemberStatus{Name: "c-1", ID: "a", Role: etcdv1beta2.MemberRoleLeader, Version: "3.5.21", DBSize: 4096, DBSizeInUse: 1024, Healthy: true}
		if len(details) != 1 || details[0] != want {
			t.Fatalf("details %+v, want %+v", details, want)
		}
	})
	t.Run("long errors are cut", func(t *testing.T) {
		obs := &observation{probeErrs: map[uint64]string{0xa: strings.Repeat("x", 5000)}}
		obs.Members = members[:1]
		details, _ := memberDetails(obs, nil)
		if n := len(details[0].LastError); n != maxMemberError {
			t.Fatalf("lastError of %d bytes", n)
		}
	})
}
