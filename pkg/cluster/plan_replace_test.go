package cluster

import (
	"strconv"
	"testing"
	"time"
)

// unready marks the pod of member c-<i> running with its etcd not ready for d.
func (w *world) unready(i int, d time.Duration) *world {
	name := "c-" + strconv.Itoa(i)
	p := w.o.Pods[name]
	p.UnreadyFor = d
	w.o.Pods[name] = p
	return w
}

// restarts sets the restart count of the etcd container of member c-<i>'s pod.
func (w *world) restarts(i int, n int32) *world {
	name := "c-" + strconv.Itoa(i)
	p := w.o.Pods[name]
	p.Restarts = n
	w.o.Pods[name] = p
	return w
}

// TestNextReplace: a voting member unhealthy, its pod running but not ready for ReplaceAfter,
// while every other voting member is healthy, is replaced; not a moment earlier, not with
// replacement off, not while another member is unhealthy too (which one is bad is not proven),
// a learner only when its etcd does not answer at all (one catching up answers and is promoted),
// not while the cluster is short of its size (the fresh member comes first),
// not a terminating or pending pod (but one stuck terminating on a lost node, whose volume may be
// gone with the node), and never on an unverified member list. After the
// replacement the cluster grows back with a new name.
func TestNextReplace(t *testing.T) {
	d := Desired{Name: "c", Size: 3, Version: "3.6.16", PVC: true, ReplaceAfter: 5 * time.Minute}
	off := d
	off.ReplaceAfter = 0
	five := d
	five.Size = 5
	long, short := 6*time.Minute, 4*time.Minute
	cases := []struct {
		name string
		d    Desired
		w    *world
		kind ActionKind
		pod  string
	}{
		{"crash-looping member", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").unready(1, long), ActionReplaceMember, "c-1"},
		{"without a volume", Desired{Name: "c", Size: 3, Version: "3.6.16", ReplaceAfter: time.Minute}, newWorld().member(0, "leader").member(1).member(2, "down").unready(2, long), ActionReplaceMember, "c-2"},
		{"the leader's peers of five", five, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").member(3, "pvc", "down").member(4, "pvc").unready(3, long), ActionReplaceMember, "c-3"},
		{"not yet", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").unready(1, short), ActionWait, "c-1"},
		{"replacement off", off, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").unready(1, long), ActionWait, "c-1"},
		{"two members of five down", five, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").member(3, "pvc", "down").member(4, "pvc").unready(1, long).unready(3, long), ActionWait, "c-1"},
		{"a learner that does not answer", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").member(3, "pvc", "learner", "down").unready(3, long), ActionReplaceMember, "c-3"},
		{"a crash-looping learner: the spec, most likely", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").member(3, "pvc", "learner", "down").unready(3, long).restarts(3, 4), ActionWait, "c-3"},
		{"a learner not yet", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: 5 * time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").member(3, "pvc", "learner", "down").unready(3, short), ActionWait, "c-3"},
		{"a learner catching up answers: promoted, never replaced", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").member(3, "pvc", "learner").unready(3, long), ActionPromote, "c-3"},
		{"a learner and a voter down", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").member(3, "pvc", "learner", "down").unready(1, long).unready(3, long), ActionWait, ""},
		{"short of its size", Desired{Name: "c", Size: 4, Version: "3.6.16", PVC: true, ReplaceAfter: time.Minute}, newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc", "down").unready(2, long), ActionWait, "c-2"},
		{"terminating", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "terminating").member(2, "pvc").unready(1, long), ActionWait, "c-1"},
		{"stuck terminating on a lost node: a new volume, its own kept", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "stuck").member(2, "pvc").unready(1, long), ActionReplaceMember, "c-1"},
		{"stuck terminating, not yet", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "stuck").member(2, "pvc").unready(1, short), ActionWait, "c-1"},
		{"stuck terminating, replacement off", off, newWorld().member(0, "leader", "pvc").member(1, "pvc", "stuck").member(2, "pvc").unready(1, long), ActionWait, "c-1"},
		{"stuck terminating while another of five is down", five, newWorld().member(0, "leader", "pvc").member(1, "pvc", "stuck").member(2, "pvc").member(3, "pvc", "down").member(4, "pvc").unready(1, long).unready(3, long), ActionWait, "c-1"},
		{"quorum lost", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc", "down").unready(1, long).unready(2, long), ActionQuorumLost, ""},
		{"unverified membership", d, newWorld().member(0, "leader", "pvc").member(1, "pvc", "down").member(2, "pvc").unready(1, long).serializable(), ActionMembershipUnverified, "c-1"},
		{"replaced: the cluster grows back under a new name", d, newWorld().member(0, "leader", "pvc").member(2, "pvc").reserve("c-1"), ActionAddMember, "c-3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.d, tc.w.o)
			if got.Kind != tc.kind || (tc.pod != "" && got.Pod != tc.pod) {
				t.Fatalf("Next = %s %q (%s), want %s %q", got.Kind, got.Pod, got.Message, tc.kind, tc.pod)
			}
		})
	}
}
