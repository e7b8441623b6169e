package cluster

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// world builds an Observed cluster "c" for table tests.
type world struct{ o Observed }

func newWorld() *world {
	return &world{o: Observed{Reachable: true, Linearizable: true, ClusterID: 0xc1, RecordedClusterID: 0xc1, Status: map[uint64]EndpointStatus{},
		Pods: map[string]PodState{}, PVCs: map[string]bool{}, ReservedNames: map[string]bool{}, Formed: true}}
}

// member adds member c-<i> (ID i+1); started members answer status unless down; a pod runs
// version v unless noPod.
func (w *world) member(i int, opts ...string) *world {
	name := "c-" + strconv.Itoa(i)
	m := Member{ID: uint64(i + 1), Name: name, PeerURLs: []string{"http://" + name + ".c.ns.svc:2380"}} //nolint:gosec // i is a small member index
	pod, healthy := true, true
	for _, o := range opts {
		switch o {
		case "learner":
			m.IsLearner = true
		case "unstarted":
			m.Name, healthy = "", false
		case "nopod":
			pod, healthy = false, false
		case "down":
			healthy = false
		case "failed":
			healthy = false
			w.o.Pods[name] = PodState{Name: name, Phase: "Failed", Version: "3.6.16"}
		case "pvc":
			w.o.PVCs[name] = true
		case "stuck":
			healthy = false
			w.o.Pods[name] = PodState{Name: name, Phase: "Running", Terminating: true, Stuck: true, Version: "3.6.16"}
		case "terminating":
			healthy = false
			w.o.Pods[name] = PodState{Name: name, Phase: "Running", Terminating: true, Version: "3.6.16"}
		case "nodelost", "nodejustlost": // its node lost past NodeLostGrace, or not yet
			lost := NodeLostGrace
			if o == "nodejustlost" {
				lost = NodeLostGrace - time.Second
			}
			defer func() {
				p := w.o.Pods[name]
				p.NodeLostFor = lost
				w.o.Pods[name] = p
			}()
		case "leader":
			w.o.Status[0] = EndpointStatus{}
			defer func() { setLeader(w, m.ID) }()
		case "old":
			defer func() {
				p := w.o.Pods[name]
				p.Version = "3.5.35"
				w.o.Pods[name] = p
				s := w.o.Status[m.ID]
				s.Version = "3.5.35"
				w.o.Status[m.ID] = s
			}()
		}
	}
	delete(w.o.Status, 0)
	w.o.Members = append(w.o.Members, m)
	if pod {
		if _, ok := w.o.Pods[name]; !ok {
			w.o.Pods[name] = PodState{Name: name, Phase: "Running", Version: "3.6.16"}
		}
	}
	if healthy {
		w.o.Status[m.ID] = EndpointStatus{MemberID: m.ID, Version: "3.6.16"}
	}
	return w
}

func setLeader(w *world, id uint64) {
	for k, s := range w.o.Status {
		s.Leader = id
		w.o.Status[k] = s
	}
}

func (w *world) pod(name string) *world {
	w.o.Pods[name] = PodState{Name: name, Phase: "Running", Version: "3.6.16"}
	return w
}

// serializable makes the member list one member's own view.
func (w *world) serializable() *world { w.o.Linearizable = false; return w }

// otherCluster makes the answering members belong to another etcd cluster.
func (w *world) otherCluster() *world { w.o.ClusterID = 0xbad; return w }

// reserve marks names held by foreign pods or volumes.
func (w *world) reserve(names ...string) *world {
	for _, n := range names {
		w.o.ReservedNames[n] = true
	}
	return w
}

func TestNext(t *testing.T) {
	d := func(size int) Desired { return Desired{Name: "c", Size: size, Version: "3.6.16"} }
	pvc := func(size int) Desired { x := d(size); x.PVC = true; return x }
	cases := []struct {
		name string
		d    Desired
		o    Observed
		want ActionKind
		pod  string
	}{
		{"new cluster: seed", d(3), Observed{}, ActionCreateSeed, "c-0"},
		{"seed pod starting: wait", d(3), Observed{Pods: map[string]PodState{"c-0": {Name: "c-0", Phase: "Pending"}}}, ActionWait, ""},
		{"restore bootstrap: wait for seed", Desired{Name: "c", Size: 3, SeedMember: "c-seed"}, Observed{}, ActionWaitForSeed, "c-seed"},
		{"formed cluster, all pods gone on emptyDir: quorum lost, no new seed", d(3), Observed{Formed: true}, ActionQuorumLost, ""},
		{"all pods gone with volumes: recreate on volume", pvc(3), Observed{Formed: true, PVCs: map[string]bool{"c-0": true, "c-1": true}}, ActionRecreatePod, "c-0"},
		{"grow: add learner", d(3), newWorld().member(0, "leader").o, ActionAddMember, "c-1"},
		{"crash after member add: create its pod", d(3), newWorld().member(0, "leader").member(1, "learner", "unstarted", "nopod").o, ActionCreatePod, "c-1"},
		{"learner starting: wait", d(3), newWorld().member(0, "leader").member(1, "learner", "unstarted").o, ActionWait, "c-1"},
		{"learner started: promote", d(3), newWorld().member(0, "leader").member(1, "learner").o, ActionPromote, "c-1"},
		{"pod without member: delete it", d(3), newWorld().member(0, "leader").pod("c-4").o, ActionDeletePod, "c-4"},
		{"dead member with quorum: remove", d(3), newWorld().member(0, "leader").member(1).member(2, "nopod").o, ActionRemoveMember, "c-2"},
		{"failed pod on emptyDir: remove member", d(3), newWorld().member(0, "leader").member(1).member(2, "failed").o, ActionRemoveMember, "c-2"},
		{"replace after removal: add", d(3), newWorld().member(0, "leader").member(1).o, ActionAddMember, "c-2"},
		{"quorum lost: nothing deleted", d(3), newWorld().member(0).member(1, "nopod").member(2, "nopod").pod("c-9").o, ActionQuorumLost, ""},
		{"restarting member: wait, keep identity", d(3), newWorld().member(0, "leader").member(1).member(2, "down").o, ActionWait, "c-2"},
		{"pvc: member pod gone, recreate on volume", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "nopod", "pvc").o, ActionRecreatePod, "c-2"},
		{"pvc: all pods gone but reachable list: recreate, quorum or not", pvc(3), newWorld().member(0, "pvc").member(1, "nopod", "pvc").member(2, "nopod", "pvc").o, ActionRecreatePod, "c-1"},
		{"pvc: failed pod deleted, member kept", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "failed", "pvc").o, ActionDeleteFailed, "c-2"},
		{"shrink: never the leader", d(2), newWorld().member(0).member(1).member(2, "leader").o, ActionRemoveMember, "c-1"},
		{"shrink: newest non-leader", d(2), newWorld().member(0, "leader").member(1).member(2).o, ActionRemoveMember, "c-2"},
		{"steady", d(3), newWorld().member(0, "leader").member(1).member(2).o, ActionNone, ""},
		{"upgrade: followers first", d(3), newWorld().member(0, "leader", "old").member(1, "old").member(2, "old").o, ActionUpgradeMember, "c-1"},
		{"upgrade: leader last", d(3), newWorld().member(0, "leader", "old").member(1).member(2).o, ActionUpgradeMember, "c-0"},
		{"upgrade: unhealthy member blocks", d(3), newWorld().member(0, "leader", "old").member(1, "down").member(2).o, ActionWait, "c-1"},
		{"upgrade refused: version unset, nothing changes", Desired{Name: "c", Size: 3}, newWorld().member(0, "leader", "old").member(1, "old").member(2, "old").o, ActionNone, ""},
		// Seed race (issue 13 item 4): bootstrap.restore, not formed: never a plain member on
		// the seed's volume, nor anything else the restore operator makes.
		{"restore bootstrap: seed volume without pod: wait for seed, no plain member", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-2"},
			Observed{PVCs: map[string]bool{"c-2": true}}, ActionWaitForSeed, "c-2"},
		{"restore bootstrap: seed pod starting: wait", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-2"},
			Observed{PVCs: map[string]bool{"c-2": true}, Pods: map[string]PodState{"c-2": {Name: "c-2", Phase: "Pending"}}}, ActionWaitForSeed, "c-2"},
		{"restore bootstrap: seed failed before formed: not deleted", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-0"},
			func() Observed {
				o := newWorld().member(0, "failed", "pvc").o
				o.Formed, o.RecordedClusterID = false, 0
				return o
			}(), ActionWait, "c-0"},
		{"restore bootstrap: formed, seed pod gone: recreate on its volume", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-0"},
			Observed{Formed: true, PVCs: map[string]bool{"c-0": true}}, ActionRecreatePod, "c-0"},
		// Every member restored at once (issue 17): nothing is judged before all of them run;
		// one still starting is not a lost member.
		{"restore bootstrap, all members at once: two of three up: wait, no quorum loss", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}},
			func() Observed {
				o := newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "down", "pvc").o
				o.Formed, o.RecordedClusterID = false, 0
				return o
			}(), ActionWait, "c-0"},
		{"restore bootstrap, all members at once: all up: record the cluster ID first", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}},
			func() Observed {
				o := newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").o
				o.Formed, o.RecordedClusterID = false, 0
				return o
			}(), ActionWait, "c-0"},
		{"restore bootstrap, all members at once: formed: steady", Desired{Name: "c", Size: 3, PVC: true, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}},
			newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "pvc").o, ActionNone, ""},
		// Restored from bootstrap.restore.source (issue 28): this operator creates every restored
		// member's pod at once, never one on a foreign name, and nothing once it formed.
		{"restore source: no pods: create the restored members", Desired{Name: "c", Size: 3, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}, BuildRestored: true},
			Observed{}, ActionRestoreMembers, "c-0"},
		{"restore source: one pod missing: create it", Desired{Name: "c", Size: 3, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}, BuildRestored: true},
			Observed{Pods: map[string]PodState{"c-0": {Name: "c-0", Phase: "Pending"}, "c-2": {Name: "c-2", Phase: "Pending"}}}, ActionRestoreMembers, "c-1"},
		{"restore source: a foreign object at a member's name: create nothing", Desired{Name: "c", Size: 3, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}, BuildRestored: true},
			Observed{Pods: map[string]PodState{"c-0": {Name: "c-0", Phase: "Pending"}, "c-2": {Name: "c-2", Phase: "Pending"}}, ReservedNames: map[string]bool{"c-1": true}}, ActionWaitForSeed, "c-0"},
		{"restore source failed: create nothing again", Desired{Name: "c", Size: 3, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}},
			Observed{}, ActionWaitForSeed, "c-0"},
		{"restore source: formed with a member gone: replaced like any member", Desired{Name: "c", Size: 3, SeedMember: "c-0", RestoredMembers: []string{"c-0", "c-1", "c-2"}, BuildRestored: true},
			newWorld().member(0, "leader").member(1).member(2, "nopod").o, ActionRemoveMember, "c-2"},
		// Ownership (item 1): foreign names are reserved.
		{"new cluster next to an old incarnation's pods: seed above their names", d(3), Observed{ReservedNames: map[string]bool{"c-0": true, "c-1": true, "c-4": true}}, ActionCreateSeed, "c-5"},
		{"grow next to a retained volume: skip its name", d(3), newWorld().member(0, "leader").reserve("c-1").o, ActionAddMember, "c-2"},
		// Verified membership (item 2).
		{"serializable list: no pod deleted", d(3), newWorld().member(0, "leader").member(1).member(2).pod("c-4").serializable().o, ActionMembershipUnverified, "c-4"},
		{"serializable list: no member removed", d(3), newWorld().member(0, "leader").member(1).member(2, "nopod").serializable().o, ActionMembershipUnverified, "c-2"},
		{"serializable list: no member added", d(3), newWorld().member(0, "leader").member(1).serializable().o, ActionMembershipUnverified, "c-2"},
		{"serializable list: no promotion", d(3), newWorld().member(0, "leader").member(1, "learner").serializable().o, ActionMembershipUnverified, "c-1"},
		{"serializable list: no added member's pod", d(3), newWorld().member(0, "leader").member(1, "learner", "unstarted", "nopod").serializable().o, ActionMembershipUnverified, "c-1"},
		{"serializable list: failed pod on its volume deleted (data kept, pod recreated)", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "failed", "pvc").serializable().o, ActionDeleteFailed, "c-2"},
		{"serializable list, quorum lost by failed pods: failed pod deleted to restart it on its volume", pvc(3), newWorld().member(0, "pvc").member(1, "failed", "pvc").member(2, "failed", "pvc").serializable().o, ActionDeleteFailed, "c-1"},
		{"serializable list: no upgrade", d(3), newWorld().member(0, "leader", "old").member(1, "old").member(2, "old").serializable().o, ActionMembershipUnverified, "c-1"},
		{"serializable list: quorum loss still seen", d(3), newWorld().member(0).member(1, "nopod").member(2, "nopod").serializable().o, ActionQuorumLost, ""},
		{"serializable list: pod recreated on its volume", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "nopod", "pvc").serializable().o, ActionRecreatePod, "c-2"},
		{"serializable list, steady: nothing", d(3), newWorld().member(0, "leader").member(1).member(2).serializable().o, ActionNone, ""},
		{"other cluster ID: no pod deleted", d(3), newWorld().member(0, "leader").member(1).member(2).pod("c-4").otherCluster().o, ActionClusterIDMismatch, "c-4"},
		{"other cluster ID: no member removed", d(3), newWorld().member(0, "leader").member(1).member(2, "nopod").otherCluster().o, ActionClusterIDMismatch, "c-2"},
		{"no cluster ID recorded yet: act on the linearizable list", d(3), func() Observed {
			o := newWorld().member(0, "leader").o
			o.RecordedClusterID = 0
			return o
		}(), ActionAddMember, "c-1"},
		// Disruptions (item 6).
		{"emptyDir member stuck terminating with quorum: remove it", d(3), newWorld().member(0, "leader").member(1).member(2, "stuck").o, ActionRemoveMember, "c-2"},
		{"emptyDir member terminating, not stuck yet: wait", d(3), newWorld().member(0, "leader").member(1).member(2, "terminating").o, ActionWait, "c-2"},
		{"pvc member stuck terminating: wait, keep its volume", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "stuck", "pvc").o, ActionWait, "c-2"},
		{"stuck member without quorum: nothing", d(3), newWorld().member(0, "leader").member(1, "stuck").member(2, "stuck").o, ActionQuorumLost, ""},
		{"stuck member removed: replacement gets a new name", d(3), newWorld().member(0, "leader").member(1).o, ActionAddMember, "c-2"},
		{"shrink: crash-looping learner removed before any wait", d(2), newWorld().member(0, "leader").member(1).member(2, "learner", "down").o, ActionRemoveMember, "c-2"},
		{"shrink: unstarted learner without pod removed, not given a pod", d(2), newWorld().member(0, "leader").member(1).member(2, "learner", "unstarted", "nopod").o, ActionRemoveMember, "c-2"},
		{"same size: crash-looping learner waited for", d(3), newWorld().member(0, "leader").member(1).member(2, "learner", "down").o, ActionWait, "c-2"},
		// A lost node (issue 34): an emptyDir member on it that does not answer is removed
		// through the membership API without waiting for its eviction; nothing else is.
		{"emptyDir member on a lost node, down: removed at once", d(3), newWorld().member(0, "leader").member(1).member(2, "down", "nodelost").o, ActionRemoveMember, "c-2"},
		{"emptyDir member on a node lost for less than the grace: wait", d(3), newWorld().member(0, "leader").member(1).member(2, "down", "nodejustlost").o, ActionWait, "c-2"},
		{"member on a lost node that still answers: kept", d(3), newWorld().member(0, "leader").member(1).member(2, "nodelost").o, ActionNone, ""},
		{"pvc member on a lost node: not this path, its volume may hold the data", pvc(3), newWorld().member(0, "leader", "pvc").member(1, "pvc").member(2, "down", "nodelost", "pvc").o, ActionWait, "c-2"},
		{"two of three on lost nodes: quorum lost, nothing removed", d(3), newWorld().member(0, "leader").member(1, "down", "nodelost").member(2, "down", "nodelost").o, ActionQuorumLost, ""},
		{"emptyDir member on a lost node already evicted, not stuck yet: removed", d(3), newWorld().member(0, "leader").member(1).member(2, "terminating", "nodelost").o, ActionRemoveMember, "c-2"},
		{"next name skips terminating pods' names", d(3), func() Observed {
			o := newWorld().member(0, "leader").member(1).o
			o.Pods["c-5"] = PodState{Name: "c-5", Terminating: true}
			return o
		}(), ActionAddMember, "c-6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.d, tc.o)
			if got.Kind != tc.want || got.Pod != tc.pod {
				t.Fatalf("Next = %s %q (%s), want %s %q", got.Kind, got.Pod, got.Message, tc.want, tc.pod)
			}
		})
	}
}

func TestNextUpgradeWaitsForRestart(t *testing.T) {
	o := newWorld().member(0, "leader").member(1).member(2).o
	o.Pods["c-1"] = PodState{Name: "c-1", Phase: "Running", Version: "3.6.16"}
	s := o.Status[2]
	s.Version = "3.5.35" // pod patched, container not restarted yet
	o.Status[2] = s
	if got := Next(Desired{Name: "c", Size: 3, Version: "3.6.16"}, o); got.Kind != ActionWait {
		t.Fatalf("Next = %s, want Wait while c-1 restarts", got.Kind)
	}
}

func TestCheckUpgrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"3.5.35", "3.6.16", true}, {"3.6.15", "3.6.16", true}, {"3.6.16", "3.6.15", true},
		{"3.6.16", "3.5.35", true}, {"3.6.16", "3.5.26", true}, {"3.6.16", "3.5.25", false}, {"3.6.16", "3.4.33", false}, {"3.4.0", "3.6.16", false}, {"", "3.6.16", true}, {"3.5.1", "3.5.1", true},
		// etcd's floor for 3.5 -> 3.6 (issue 13 item 7).
		{"3.5.26", "3.6.16", true}, {"3.5.25", "3.6.16", false}, {"3.5.21", "3.6.0", false}, {"v3.5.0", "v3.6.16", false},
		{"3.5.21", "3.5.35", true},
	} {
		if err := CheckUpgrade(tc.from, tc.to); (err == nil) != tc.ok {
			t.Errorf("CheckUpgrade(%s, %s) = %v, want ok=%t", tc.from, tc.to, err, tc.ok)
		}
	}
}

func TestCheckUpgradeSaysWhereToGoFirst(t *testing.T) {
	err := CheckUpgrade("3.5.21", "3.6.16")
	if err == nil {
		t.Fatal("3.5.21 -> 3.6.16 allowed, want refused")
	}
	for _, want := range []string{"3.5.26 or newer", "3.5.35", "3.6.16"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
}

func TestPodName(t *testing.T) {
	if got := (Member{PeerURLs: []string{"https://c-3.c.ns.svc.cluster.local:2380"}}).PodName(); got != "c-3" {
		t.Fatalf("PodName = %q", got)
	}
}

func TestNextLeaderlessSurvivorCountsAsUp(t *testing.T) {
	// 3 members, one answers but has no leader: quorum lost, and the message names the two
	// members that are down, not the survivor.
	o := newWorld().member(0).member(1, "down").member(2, "down").o
	s := o.Status[1]
	s.Errors = []string{"etcdserver: no leader"}
	o.Status[1] = s
	got := Next(Desired{Name: "c", Size: 3}, o)
	if got.Kind != ActionQuorumLost || got.Message[:10] != "2 of 3 vot" {
		t.Fatalf("Next = %s %q", got.Kind, got.Message)
	}
	// Two answer, one of them leaderless for a moment (an election): not quorum lost, wait.
	o = newWorld().member(0, "leader").member(1).member(2, "down").o
	s = o.Status[2]
	s.Errors = []string{"etcdserver: no leader"}
	o.Status[2] = s
	if got := Next(Desired{Name: "c", Size: 3}, o); got.Kind != ActionWait {
		t.Fatalf("Next = %s %q, want Wait", got.Kind, got.Message)
	}
}

// TestNextStaleInitialCluster: a learner whose pod was made while another member was still in
// the list (then removed: the leader was killed during a scale-up, found by the chaos suite)
// never starts; its pod (and empty volume) is deleted so that it is made again with the
// current membership. A pod whose --initial-cluster matches is waited for.
func TestNextStaleInitialCluster(t *testing.T) {
	w := newWorld().member(1, "leader").member(2).member(3, "learner", "unstarted")
	p := w.o.Pods["c-3"]
	p.InitialCluster = []string{"c-0", "c-1", "c-2", "c-3"}
	w.o.Pods["c-3"] = p
	act := Next(Desired{Name: "c", Size: 5}, w.o)
	if act.Kind != ActionDeletePod || act.Pod != "c-3" || !strings.Contains(act.Message, "never started") {
		t.Fatalf("stale pod: %+v", act)
	}
	p.InitialCluster = []string{"c-1", "c-2", "c-3"}
	w.o.Pods["c-3"] = p
	if act := Next(Desired{Name: "c", Size: 5}, w.o); act.Kind != ActionWait {
		t.Fatalf("current pod: %+v", act)
	}
	w.o.Linearizable = false
	p.InitialCluster = []string{"c-0", "c-1", "c-2", "c-3"}
	w.o.Pods["c-3"] = p
	if act := Next(Desired{Name: "c", Size: 5}, w.o); act.Kind != ActionMembershipUnverified {
		t.Fatalf("stale pod on an unverified list: %+v", act)
	}
}
