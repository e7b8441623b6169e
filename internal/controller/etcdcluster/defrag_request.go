package etcdcluster

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// A defragmentation round on demand: the annotation etcd.database.coreos.com/defragment-requested-at
// (etcdv1beta2.AnnotationDefragmentRequestedAt) asks for one, status.defragmentRequest records
// the round under way (the members it defragmented so far) and status.lastDefragmentRequest the
// value of the last round that finished. The round itself is the planner's
// (cluster.MaintenancePolicy.Requested): the safety rules of a scheduled round, one member per
// pass. The bookkeeping changes c.Status only; the pass's single status patch writes it.

const (
	// maxRequestValue bounds the annotation's value kept in status (the CRD's maxLength); an
	// RFC 3339 time is at most 35 bytes.
	maxRequestValue = 64
	// maxRequestMessage bounds status.defragmentRequest.message (the CRD's maxLength).
	maxRequestMessage = 1024
	// eventInvalidDefragmentRequest is the reason of the Warning event for a value that is not
	// an RFC 3339 time.
	eventInvalidDefragmentRequest = "InvalidDefragmentRequest"
)

// requestMemory is what this process last wrote of a cluster's request (key: cluster UID),
// next to status, which a pass that read the cluster from a cache that had not seen the last
// status patch yet would set back: a member defragmented twice in one round, a round run
// twice, a Warning repeated (as Reconciler.defragmented for the members' times).
type requestMemory struct {
	value  string // the annotation's value (cut) it is about
	last   string
	record *etcdv1beta2.DefragmentRequestStatus
}

// acceptDefragmentRequest starts, at the beginning of a pass, the round a new value of the
// annotation asks for (Pending, started now) or refuses a value that is not an RFC 3339 time
// (Refused, a Warning event, once per value); a value already handled or under way changes
// nothing, and a removed annotation withdraws the round. A pending round's message is cleared:
// maintenance or settleDefragmentRequest says at the end of the pass what it did or waits for.
func (r *Reconciler) acceptDefragmentRequest(c *etcdv1beta2.EtcdCluster) {
	st := &c.Status
	raw := c.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt]
	if raw == "" {
		st.DefragmentRequest = nil
		r.defragRequests.Delete(string(c.UID))
		return
	}
	v := cut(raw, maxRequestValue)
	if m, ok := r.defragRequests.Load(string(c.UID)); ok && m.(requestMemory).value == v {
		mem := m.(requestMemory)
		st.LastDefragmentRequest, st.DefragmentRequest = mem.last, mem.record.DeepCopy()
	}
	switch rq := st.DefragmentRequest; {
	case v == st.LastDefragmentRequest:
		st.DefragmentRequest = nil // handled
	case rq != nil && rq.RequestedAt == v:
		// under way, or refused already
	default:
		if _, err := time.Parse(time.RFC3339, raw); err != nil || len(raw) > maxRequestValue {
			msg := fmt.Sprintf("annotation %s=%q is not an RFC 3339 time (such as %s): nothing is defragmented for it; write a new value to request a round (kubectl etcd defrag writes the current time)",
				etcdv1beta2.AnnotationDefragmentRequestedAt, v, r.Clock.Now().UTC().Format(time.RFC3339))
			st.DefragmentRequest = &etcdv1beta2.DefragmentRequestStatus{RequestedAt: v, State: etcdv1beta2.DefragmentRequestRefused, Message: cutMessage(msg)}
			r.event(c, corev1.EventTypeWarning, eventInvalidDefragmentRequest, msg)
			break
		}
		st.DefragmentRequest = &etcdv1beta2.DefragmentRequestStatus{RequestedAt: v, State: etcdv1beta2.DefragmentRequestPending,
			StartedAt: &metav1.Time{Time: r.Clock.Now().Truncate(time.Second)}}
	}
	if rq := st.DefragmentRequest; rq != nil && rq.State == etcdv1beta2.DefragmentRequestPending {
		rq.Message = ""
	}
}

// requestedRound is the requested round under way for the planner: whether there is one, and
// the members it defragmented already.
func requestedRound(c *etcdv1beta2.EtcdCluster) (bool, map[string]bool) {
	rq := c.Status.DefragmentRequest
	if rq == nil || rq.State != etcdv1beta2.DefragmentRequestPending {
		return false, nil
	}
	done := map[string]bool{}
	for _, name := range rq.Defragmented {
		done[name] = true
	}
	return true, done
}

// trackDefragmentRequest records what this pass's maintenance step means for a pending round:
// a member defragmented (by any rule: it was defragmented after the request) is done; the
// round done records the request as handled; anything else is what the round waits for.
func (r *Reconciler) trackDefragmentRequest(c *etcdv1beta2.EtcdCluster, act cluster.MaintenanceAction, err error) {
	rq := c.Status.DefragmentRequest
	if rq == nil || rq.State != etcdv1beta2.DefragmentRequestPending {
		return
	}
	switch {
	case err != nil:
		rq.Message = cutMessage("the requested round waits: " + err.Error())
	case act.Kind == cluster.MaintenanceDefragment:
		var members []string
		for _, d := range c.Status.Members.Details {
			members = append(members, d.Name)
		}
		done := []string{}
		for _, name := range append(rq.Defragmented, act.Pod) {
			if slices.Contains(members, name) && !slices.Contains(done, name) {
				done = append(done, name)
			}
		}
		rq.Defragmented = done
		rq.Message = cutMessage(fmt.Sprintf("defragmented member %s, %d of %d members in the requested round; one member per pass, the leader last", act.Pod, len(done), len(members)))
	case act.Kind == cluster.MaintenanceRoundDone:
		msg := "every member was defragmented in the round requested at " + rq.RequestedAt
		if rq.StartedAt != nil {
			msg += fmt.Sprintf(" (%s)", r.Clock.Now().Sub(rq.StartedAt.Time).Round(time.Second))
		}
		r.event(c, corev1.EventTypeNormal, "DefragmentRequestDone", msg)
		c.Status.LastDefragmentRequest, c.Status.DefragmentRequest = rq.RequestedAt, nil
	case act.Message != "":
		rq.Message = cutMessage("the requested round waits: " + act.Message)
	}
}

// settleDefragmentRequest, at the end of every pass, says why a pending round took no step in
// it (the condition that held it: Paused, Degraded, Progressing) and remembers what the pass
// writes to status.
func (r *Reconciler) settleDefragmentRequest(c *etcdv1beta2.EtcdCluster) {
	rq := c.Status.DefragmentRequest
	if rq != nil && rq.State == etcdv1beta2.DefragmentRequestPending && rq.Message == "" {
		why := "the cluster is not ready for upkeep"
		for _, t := range []string{etcdv1beta2.ClusterConditionPaused, etcdv1beta2.ClusterConditionDegraded, etcdv1beta2.ClusterConditionProgressing} {
			if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
				why = t + " (" + cond.Reason + "): " + cond.Message
				break
			}
		}
		rq.Message = cutMessage("the requested round waits for a pass in which every member is started, voting and healthy and no membership change is pending: " + why)
	}
	v := c.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt]
	if v == "" {
		return
	}
	r.defragRequests.Store(string(c.UID), requestMemory{value: cut(v, maxRequestValue), last: c.Status.LastDefragmentRequest, record: rq.DeepCopy()})
}

// cutMessage bounds a message for status.defragmentRequest.message.
func cutMessage(msg string) string {
	if len(msg) > maxRequestMessage {
		return cut(msg, maxRequestMessage-3) + "..."
	}
	return msg
}

// cut is the longest prefix of s of at most n bytes that ends at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
