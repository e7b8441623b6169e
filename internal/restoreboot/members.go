package restoreboot

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Member is how one restored member's pod is doing.
type Member struct {
	Name    string
	Pod     *corev1.Pod // nil: no pod (not created yet, or deleted once the cluster formed)
	Res     *restoreseed.Result
	Done    bool   // the restore step succeeded
	Waiting string // why the pod's init containers wait
}

// NewMember reads the member name from its pod p (nil: none).
func NewMember(name string, p *corev1.Pod) *Member {
	m := &Member{Name: name, Pod: p}
	if p != nil {
		m.Res, m.Done, m.Waiting = Result(p)
	}
	return m
}

// Failed reports whether m's restore step failed for good (a retry would fail the same way).
func (m *Member) Failed() bool {
	return m.Pod != nil && !m.Done && m.Res != nil && m.Res.Outcome == restoreseed.OutcomeFailed &&
		m.Res.Reason != etcdv1beta2.ReasonStorageUnreachable && m.Res.Reason != etcdv1beta2.ReasonTimeout
}

// Members are the members of one cluster restored at once, in the order of their names.
type Members []*Member

// FirstFailed is the first member whose restore step failed for good, or nil.
func (ms Members) FirstFailed() *Member {
	for _, m := range ms {
		if m.Failed() {
			return m
		}
	}
	return nil
}

// QuorumStarted reports whether a quorum of the members runs (or ran) etcd on the restored
// data: from then on they may have formed a cluster that serves writes, and no member that runs
// etcd is stopped, whatever happens to the restore.
func (ms Members) QuorumStarted() bool {
	return len(ms.Started()) > len(ms)/2
}

// Started are the members that restored the backup and whose etcd has started on it.
func (ms Members) Started() []string {
	var out []string
	for _, m := range ms {
		if m.Pod != nil && m.Done && etcdStarted(m.Pod) {
			out = append(out, m.Name)
		}
	}
	return out
}

// SameSnapshot checks that every member that reported its restore found the same revision and
// keyspace hash in the backup: they all restored the one verified object. It returns the first
// report (nil when none reported figures).
func (ms Members) SameSnapshot() (*restoreseed.Result, error) {
	var first *Member
	for _, m := range ms {
		if !m.Done || m.Res == nil || m.Res.Revision == 0 {
			continue
		}
		if first == nil {
			first = m
			continue
		}
		if m.Res.Revision != first.Res.Revision || (m.Res.HashKV != 0 && first.Res.HashKV != 0 && m.Res.HashKV != first.Res.HashKV) {
			return nil, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "members %s and %s restored different data from the same backup: revision %d hash %d, revision %d hash %d",
				first.Name, m.Name, first.Res.Revision, first.Res.HashKV, m.Res.Revision, m.Res.HashKV)
		}
	}
	if first == nil {
		return nil, nil
	}
	return first.Res, nil
}

// Describe says where each member's restore is, for a progress message.
func (ms Members) Describe() string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		var st string
		switch {
		case m.Pod == nil:
			st = "no pod"
		case m.Done:
			st = "restored, starting etcd"
		case m.Res != nil && m.Res.Outcome == restoreseed.OutcomeFailed:
			st = "retrying: " + m.Res.Message
		default:
			st = "fetching, verifying and restoring the backup"
		}
		if m.Waiting != "" {
			st += " (" + m.Waiting + ")"
		}
		parts = append(parts, m.Name+" "+st)
	}
	return fmt.Sprintf("restoring the backup into %d members at once: %s", len(ms), strings.Join(parts, "; "))
}

// etcdStarted reports whether the etcd container of p runs or ever ran.
func etcdStarted(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == member.ContainerName {
			return st.State.Running != nil || st.State.Terminated != nil || st.RestartCount > 0 || st.Ready
		}
	}
	return member.PodReady(p)
}
