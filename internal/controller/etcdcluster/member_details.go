package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// maxMemberError bounds a member's lastError in status (the CRD's maxLength).
const maxMemberError = 1024

// memberDetails describes every member of the observed member list for status.members.details,
// sorted by name, and names the leader. prev is the previous details, whose
// lastDefragmentationTime is kept for members still there (by ID).
func memberDetails(obs *observation, prev []etcdv1beta2.MemberStatus) ([]etcdv1beta2.MemberStatus, string) {
	defragmented, nodes := map[string]*metav1.Time{}, map[string]string{}
	for _, d := range prev {
		defragmented[d.ID], nodes[d.ID] = d.LastDefragmentationTime, d.NodeName
	}
	leaderID := leaderOf(obs.Status)
	leader := ""
	details := make([]etcdv1beta2.MemberStatus, 0, len(obs.Members))
	for _, m := range obs.Members {
		s, answered := obs.Status[m.ID]
		d := etcdv1beta2.MemberStatus{Name: m.PodName(), ID: fmt.Sprintf("%x", m.ID), Role: etcdv1beta2.MemberRoleUnknown}
		d.LastDefragmentationTime = defragmented[d.ID]
		d.NodeName = nodeOf(obs, d.Name, nodes[d.ID])
		switch {
		case m.IsLearner:
			d.Role = etcdv1beta2.MemberRoleLearner
		case m.ID == leaderID:
			d.Role = etcdv1beta2.MemberRoleLeader
			leader = d.Name
		case answered:
			d.Role = etcdv1beta2.MemberRoleFollower
		}
		if answered {
			d.Version, d.DBSize, d.DBSizeInUse = s.Version, s.DBSize, s.DBSizeInUse
			d.Healthy = len(s.Errors) == 0
			d.LastError = strings.Join(s.Errors, "; ")
		} else {
			d.LastError = obs.probeErrs[m.ID]
			if d.LastError == "" {
				d.LastError = "did not answer"
			}
		}
		if len(d.LastError) > maxMemberError {
			d.LastError = d.LastError[:maxMemberError-3] + "..."
		}
		details = append(details, d)
	}
	sort.Slice(details, func(i, j int) bool { return details[i].Name < details[j].Name })
	return details, leader
}

// unreachableDetails keeps the members described when none answers (their record of
// defragmentation and their nodes included), as not healthy with an unknown role.
func unreachableDetails(obs *observation, prev []etcdv1beta2.MemberStatus) []etcdv1beta2.MemberStatus {
	out := make([]etcdv1beta2.MemberStatus, 0, len(prev))
	for _, d := range prev {
		d.Role, d.Healthy, d.LastError = etcdv1beta2.MemberRoleUnknown, false, "no member answers"
		d.NodeName = nodeOf(obs, d.Name, d.NodeName)
		out = append(out, d)
	}
	return out
}

// nodeOf is the node of the member's pod, or last when the pod is gone or not scheduled yet.
func nodeOf(obs *observation, name, last string) string {
	if p := obs.pods[name]; p != nil && p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return last
}

// leaderOf returns the leader's member ID: a member that says it is the leader (the one with
// the highest raft index if, during an election, two do), else the ID most members report; 0
// when no member answered.
func leaderOf(status map[uint64]cluster.EndpointStatus) uint64 {
	var self uint64
	var selfIndex uint64
	votes := map[uint64]int{}
	for id, s := range status {
		if s.Leader == 0 {
			continue
		}
		votes[s.Leader]++
		if s.Leader == id && (self == 0 || s.RaftIndex > selfIndex) {
			self, selfIndex = id, s.RaftIndex
		}
	}
	if self != 0 {
		return self
	}
	var best uint64
	for id, n := range votes {
		if n > votes[best] || (n == votes[best] && id < best) {
			best = id
		}
	}
	return best
}
