package cluster

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// coreosWorld is a running 3-member cluster that coreos/etcd-operator made: members named
// c-<random>, pods marked Coreos, the first one leading.
func coreosWorld(names ...string) *world {
	w := newWorld()
	w.o.Formed, w.o.RecordedClusterID = false, 0
	for i, name := range names {
		id := uint64(101 + i)
		w.o.Members = append(w.o.Members, Member{ID: id, Name: name, PeerURLs: []string{"http://" + name + ".c.ns.svc:2380"}})
		w.o.Pods[name] = PodState{Name: name, Phase: "Running", Version: "3.5.35", Coreos: true}
		w.o.Status[id] = EndpointStatus{MemberID: id, Version: "3.5.35", Leader: 101}
	}
	return w
}

// TestTakeOverCoreos drives nextTakeOver's steps against a simulated cluster from three coreos
// members to three of this operator's own: the membership never goes above Size+1, every
// removal leaves every other member healthy and voting, the leader is removed only after
// leadership moved, a learner that has not started yet is waited for (not removed as a
// shrink's unhealthy learner), and the end is c-0, c-1, c-2 with nothing left to do.
func TestTakeOverCoreos(t *testing.T) {
	for _, tc := range []struct {
		name    string
		coreos  []string
		size    int
		wantEnd []string
	}{
		{"three to three", []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}, 3, []string{"c-0", "c-1", "c-2"}},
		{"three to five", []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}, 5, []string{"c-0", "c-1", "c-2", "c-3", "c-4"}},
		{"three to one", []string{"c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p"}, 1, []string{"c-0"}},
		{"one to three", []string{"c-4bxk7m2q9z"}, 3, []string{"c-0", "c-1", "c-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := coreosWorld(tc.coreos...)
			d := Desired{Name: "c", Size: tc.size, TakeOver: true}
			nextID := uint64(1)
			leader := uint64(101)
			var kinds []string
			for step := 0; ; step++ {
				if step > 100 {
					t.Fatalf("no end after 100 steps: %s", strings.Join(kinds, " "))
				}
				act := Next(d, w.o)
				kinds = append(kinds, string(act.Kind))
				if n := len(w.o.Members); n > max(tc.size, len(tc.coreos))+1 {
					t.Fatalf("%d members at step %d (%s)", n, step, strings.Join(kinds, " "))
				}
				switch act.Kind {
				case ActionNone:
					var names []string
					for _, m := range w.o.Members {
						names = append(names, m.Name)
						if m.IsLearner || w.o.Pods[m.Name].Coreos {
							t.Fatalf("end with member %+v", m)
						}
					}
					slices.Sort(names)
					if !slices.Equal(names, tc.wantEnd) || !slices.Equal(slices.Sorted(maps.Keys(w.o.Pods)), tc.wantEnd) {
						t.Fatalf("end with members %v, pods %v; want %v (%s)", names, slices.Sorted(maps.Keys(w.o.Pods)), tc.wantEnd, strings.Join(kinds, " "))
					}
					return
				case ActionAddMember:
					if !strings.HasPrefix(act.Pod, "c-") || MemberIndex(act.Pod) < 0 {
						t.Fatalf("added %q, want an ordinal name", act.Pod)
					}
					// Added and its pod made in the same pass; it starts on the pass after next.
					w.o.Members = append(w.o.Members, Member{ID: nextID, IsLearner: true, PeerURLs: []string{"http://" + act.Pod + ".c.ns.svc:2380"}})
					w.o.Pods[act.Pod] = PodState{Name: act.Pod, Phase: "Running", Version: "3.5.35"}
					nextID++
				case ActionWait:
					// The learner starts.
					for i, m := range w.o.Members {
						if !m.Started() {
							w.o.Members[i].Name = m.PodName()
							w.o.Status[m.ID] = EndpointStatus{MemberID: m.ID, Version: "3.5.35", IsLearner: true}
						}
					}
				case ActionPromote:
					for i, m := range w.o.Members {
						if m.ID == act.MemberID {
							w.o.Members[i].IsLearner = false
						}
					}
				case ActionMoveLeader:
					if !w.o.Pods[act.Pod].Coreos || w.o.Pods[w.o.Members[slices.IndexFunc(w.o.Members, func(m Member) bool { return m.ID == act.MemberID })].Name].Coreos {
						t.Fatalf("leadership moved from %s to member %d", act.Pod, act.MemberID)
					}
					leader = act.MemberID
				case ActionRemoveMember:
					if act.MemberID == leader {
						t.Fatalf("the leader %s removed", act.Pod)
					}
					if !w.o.Pods[act.Pod].Coreos && len(w.o.Members) <= tc.size {
						t.Fatalf("member %s of this operator's own removed", act.Pod)
					}
					for _, m := range w.o.Members {
						if m.IsLearner || !w.o.Healthy(m.ID) {
							t.Fatalf("member %s removed while %+v is not a healthy voter", act.Pod, m)
						}
					}
					w.o.Members = slices.DeleteFunc(w.o.Members, func(m Member) bool { return m.ID == act.MemberID })
					delete(w.o.Status, act.MemberID)
					delete(w.o.Pods, act.Pod)
				default:
					t.Fatalf("unexpected step %s: %s", act.Kind, act.Message)
				}
				for id, s := range w.o.Status {
					s.Leader = leader
					w.o.Status[id] = s
				}
			}
		})
	}
}

// TestTakeOverNeedsGoAhead: without Desired.TakeOver, a cluster of coreos members at its size
// gets no takeover step (the controller holds such a cluster before planning anyway).
func TestTakeOverNeedsGoAhead(t *testing.T) {
	w := coreosWorld("c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p")
	if act := Next(Desired{Name: "c", Size: 3}, w.o); act.Kind != ActionNone {
		t.Fatalf("step %s without the go-ahead: %s", act.Kind, act.Message)
	}
	w.o.Members[0].Name = "" // a coreos member that is down: nothing is taken over around it
	delete(w.o.Status, 101)
	w.o.Members[0].PeerURLs = []string{"http://c-4bxk7m2q9z.c.ns.svc:2380"}
	if act := Next(Desired{Name: "c", Size: 3, TakeOver: true}, w.o); act.Kind == ActionAddMember || act.Kind == ActionRemoveMember && act.Pod != "c-4bxk7m2q9z" {
		t.Fatalf("step %s %s with a member down", act.Kind, act.Pod)
	}
}

// TestTakeOverFailedCoreosMemberOnVolumesSpec: a coreos member keeps its data in its pod even
// when the spec gives this operator's members volumes: its failed pod (restartPolicy Never)
// means its data is gone, and it is removed, not waited for as a member on a volume would be.
func TestTakeOverFailedCoreosMemberOnVolumesSpec(t *testing.T) {
	w := coreosWorld("c-4bxk7m2q9z", "c-8hj2lqwx5r", "c-zz7c2m4n6p")
	p := w.o.Pods["c-8hj2lqwx5r"]
	p.Phase = "Failed"
	w.o.Pods["c-8hj2lqwx5r"] = p
	delete(w.o.Status, 102)
	act := Next(Desired{Name: "c", Size: 3, PVC: true, TakeOver: true}, w.o)
	if act.Kind != ActionRemoveMember || act.Pod != "c-8hj2lqwx5r" {
		t.Fatalf("step %s %s: %s, want the failed coreos member removed", act.Kind, act.Pod, act.Message)
	}
}
