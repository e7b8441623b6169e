package cluster

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// leaderless makes member c-<i> answer without a leader, at raft index idx and revision rev.
func (w *world) leaderless(i int, idx uint64, rev int64) *world {
	id := uint64(i + 1) //nolint:gosec // i is a small member index
	w.o.Status[id] = EndpointStatus{MemberID: id, Version: "3.6.16", RaftIndex: idx, Revision: rev, Errors: []string{"etcdserver: no leader"}}
	return w
}

// forced marks the pod of member c-<i> made with --force-new-cluster.
func (w *world) forced(i int) *world {
	name := "c-" + strconv.Itoa(i)
	p := w.o.Pods[name]
	p.ForcedNewCluster = true
	w.o.Pods[name] = p
	return w
}

func withLeader(w *world, id uint64) *world { setLeader(w, id); return w }

func vols(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// TestPlanSurvivorRecovery: the survivor with the highest committed index is kept (then the
// highest revision, then the first name), an earlier pass's choice is kept again; nothing is
// forced while a majority still has volumes (a partition), while a survivor does not answer,
// while one follows a leader, when no volume survives, or when the answers come from another
// cluster.
func TestPlanSurvivorRecovery(t *testing.T) {
	five := func() *world {
		return newWorld().member(0, "down").member(1, "down").member(2, "down").member(3, "down").member(4, "down")
	}
	cases := []struct {
		name    string
		w       *world
		volumes map[string]bool
		forced  string
		keep    string
		others  []string
		why     string
	}{
		{"one survivor of three", newWorld().member(0, "down").member(1, "down").member(2, "down").leaderless(1, 40, 12), vols("c-1"), "", "c-1", nil, ""},
		{"the newest of two survivors of five", five().leaderless(1, 40, 12).leaderless(3, 41, 12), vols("c-1", "c-3"), "", "c-3", []string{"c-1"}, ""},
		{"same index: the higher revision", five().leaderless(1, 41, 13).leaderless(3, 41, 12), vols("c-1", "c-3"), "", "c-1", []string{"c-3"}, ""},
		{"an earlier pass's choice is kept", five().leaderless(1, 40, 12).leaderless(3, 41, 12), vols("c-1", "c-3"), "c-1", "c-1", []string{"c-3"}, ""},
		{"a learner's volume is kept, not used", newWorld().member(0, "down").member(1, "down").member(2, "down").member(3, "learner", "down").leaderless(1, 40, 12).leaderless(3, 99, 30),
			vols("c-1", "c-3"), "", "c-1", []string{"c-3"}, ""},
		{"a majority still has volumes: a partition", newWorld().member(0, "down").member(1, "down").member(2, "down").leaderless(1, 40, 12), vols("c-1", "c-2"), "", "", nil, "may come back"},
		{"a survivor does not answer", five().leaderless(1, 40, 12), vols("c-1", "c-3"), "", "", nil, "c-3 does not answer"},
		{"a survivor follows a leader", withLeader(newWorld().member(0).member(1).member(2, "down"), 1), vols("c-1"), "", "", nil, "quorum is not lost"},
		{"no volume left", newWorld().member(0, "down").member(1, "down").member(2, "down"), vols(), "", "", nil, "restore the cluster from a backup"},
		{"another cluster answers", newWorld().member(0, "down").member(1, "down").member(2, "down").leaderless(1, 40, 12).otherCluster(), vols("c-1"), "", "", nil, "recorded in status.clusterID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, why := PlanSurvivorRecovery(tc.w.o, tc.volumes, tc.forced)
			if tc.why != "" {
				if !strings.Contains(why, tc.why) {
					t.Fatalf("why = %q, want it to say %q (plan %+v)", why, tc.why, plan)
				}
				return
			}
			if why != "" || plan.Keep.PodName() != tc.keep {
				t.Fatalf("kept %q (why %q), want %q", plan.Keep.PodName(), why, tc.keep)
			}
			var others []string
			for _, m := range plan.Others {
				others = append(others, m.PodName())
			}
			if strings.Join(others, ",") != strings.Join(tc.others, ",") {
				t.Fatalf("others = %v, want %v", others, tc.others)
			}
			if len(plan.Lost)+len(plan.Others)+1 != len(tc.w.o.Members) && !strings.Contains(tc.name, "learner") {
				t.Fatalf("lost %v, others %v, kept %s: not every member accounted for", plan.Lost, others, tc.keep)
			}
			if !strings.Contains(plan.Describe(), "keeping member "+tc.keep) {
				t.Fatalf("Describe = %q", plan.Describe())
			}
		})
	}
}

// TestSurvivorPlanNamesInOrder: etcd lists members by ID, not by name; the plan names the lost
// members and the others in name order, so status.lastSurvivorRecovery and events read the same
// whatever IDs the members drew (CI stop 45 failed on [c-2 c-0]).
func TestSurvivorPlanNamesInOrder(t *testing.T) {
	w := newWorld().member(4, "down").member(2, "down").member(0, "down").member(3, "down").member(1, "down").
		leaderless(3, 40, 12).leaderless(1, 39, 12)
	plan, why := PlanSurvivorRecovery(w.o, vols("c-3", "c-1"), "")
	if why != "" {
		t.Fatal(why)
	}
	if got := PodNames(plan.Lost); !slices.Equal(got, []string{"c-0", "c-2", "c-4"}) {
		t.Errorf("lost %v, want [c-0 c-2 c-4]", got)
	}
	if got := PodNames(plan.Others); !slices.Equal(got, []string{"c-1"}) {
		t.Errorf("others %v, want [c-1]", got)
	}
	if !strings.Contains(plan.Describe(), "the volumes of c-0, c-2, c-4 are gone") {
		t.Errorf("Describe = %q", plan.Describe())
	}
}

// TestNextForced: while a member runs with --force-new-cluster nothing joins; once it stands
// alone and healthy it is restarted without the flag, on a linearizable list of the recorded
// cluster only; then the cluster grows back.
func TestNextForced(t *testing.T) {
	d := Desired{Name: "c", Size: 3, Version: "3.6.16", PVC: true}
	cases := []struct {
		name string
		w    *world
		kind ActionKind
		pod  string
	}{
		{"alone and healthy: restart without the flag", newWorld().member(1, "leader", "pvc").forced(1), ActionRestartForced, "c-1"},
		{"not healthy yet: wait", newWorld().member(1, "pvc").leaderless(1, 40, 12).forced(1), ActionWait, "c-1"},
		{"not alone yet: wait", newWorld().member(1, "leader", "pvc").member(2, "pvc").forced(1), ActionWait, "c-1"},
		{"unverified list: held back", newWorld().member(1, "leader", "pvc").forced(1).serializable(), ActionMembershipUnverified, "c-1"},
		{"restarted without the flag: grow", newWorld().member(1, "leader", "pvc").reserve("c-0"), ActionAddMember, "c-2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(d, tc.w.o)
			if got.Kind != tc.kind || got.Pod != tc.pod {
				t.Fatalf("Next = %s %q (%s), want %s %q", got.Kind, got.Pod, got.Message, tc.kind, tc.pod)
			}
		})
	}
}
