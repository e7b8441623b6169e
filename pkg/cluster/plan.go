package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PodState is what the controller observed about one member pod.
type PodState struct {
	Name string
	// Phase is the pod phase: Pending, Running, Succeeded, Failed (or Unknown).
	Phase string
	// Terminating is true once the pod has a deletion timestamp.
	Terminating bool
	// Version is the etcd version of the pod's image tag (without "v").
	Version string
}

// Healthy reports whether member id answered without errors.
func (o Observed) Healthy(id uint64) bool {
	s, ok := o.Status[id]
	return ok && len(s.Errors) == 0
}

// Failed reports whether the pod is finished and will not run again.
func (p PodState) Failed() bool { return p.Phase == "Failed" || p.Phase == "Succeeded" }

// Observed is one pass's view of the world: etcd's member list and each member's answer,
// and the member pods and volumes in Kubernetes.
type Observed struct {
	// Reachable is true when a member answered the member list.
	Reachable bool
	Members   []Member
	// Status holds the answers of the members that answered, by member ID. A member that
	// answers with errors (no leader, an alarm) is up but not healthy.
	Status map[uint64]EndpointStatus
	// Pods are the member pods of the cluster, by name.
	Pods map[string]PodState
	// PVCs are the names of the members that have a data volume claim.
	PVCs map[string]bool
	// Formed is true once the cluster was seen running (a cluster ID was recorded): from then
	// on an empty cluster is never recreated silently.
	Formed bool
}

// Desired is what the spec asks for, reduced to what the decision needs.
type Desired struct {
	// Name is the cluster name; member pods are named <name>-<n>.
	Name string
	Size int
	// Version is the version members should run; empty: do not touch versions.
	Version string
	// PVC is true when members keep their data on PersistentVolumeClaims.
	PVC bool
	// SeedMember is set when the restore operator makes the seed member (bootstrap.restore).
	SeedMember string
}

// ActionKind is the kind of the next step.
type ActionKind string

// The steps the controller can take; exactly one per pass.
const (
	ActionNone          ActionKind = "None"          // nothing to do: the cluster matches the spec
	ActionWait          ActionKind = "Wait"          // something is in progress; observe again later
	ActionWaitForSeed   ActionKind = "WaitForSeed"   // bootstrap.restore: the seed pod is not there yet
	ActionQuorumLost    ActionKind = "QuorumLost"    // a majority of voting members is down: touch nothing
	ActionCreateSeed    ActionKind = "CreateSeed"    // create the first member's pod (new cluster)
	ActionCreatePod     ActionKind = "CreatePod"     // create the pod of a member added but never started
	ActionRecreatePod   ActionKind = "RecreatePod"   // create the pod of a member on its existing volume
	ActionAddMember     ActionKind = "AddMember"     // add a learner through the membership API
	ActionPromote       ActionKind = "Promote"       // promote a started learner
	ActionRemoveMember  ActionKind = "RemoveMember"  // remove a member, then delete its pod and volume
	ActionDeletePod     ActionKind = "DeletePod"     // delete a pod (and volume) that has no member
	ActionDeleteFailed  ActionKind = "DeleteFailed"  // delete a failed pod whose data lives on a volume
	ActionUpgradeMember ActionKind = "UpgradeMember" // move one member's pod to Version
)

// Action is the next step, with the member and pod it applies to.
type Action struct {
	Kind     ActionKind
	MemberID uint64
	Pod      string
	Version  string
	// Message explains the step for conditions and events.
	Message string
}

// Next returns the single next step that moves the observed cluster toward d. It never
// returns a step that deletes anything while a majority of voting members is down.
func Next(d Desired, o Observed) Action {
	if !o.Reachable {
		return nextUnreachable(d, o)
	}
	members := map[string]Member{}
	for _, m := range o.Members {
		members[m.PodName()] = m
	}
	// Volumes keep members' data: bring their pods back first, quorum or not.
	if d.PVC {
		for _, m := range o.Members {
			p, ok := o.Pods[m.PodName()]
			switch {
			case m.Started() && !ok && o.PVCs[m.PodName()]:
				return Action{Kind: ActionRecreatePod, MemberID: m.ID, Pod: m.PodName(), Message: "recreating the pod of member " + m.PodName() + " on its volume"}
			case m.Started() && ok && p.Failed() && !p.Terminating && o.PVCs[m.PodName()]:
				return Action{Kind: ActionDeleteFailed, MemberID: m.ID, Pod: p.Name, Message: "deleting failed pod " + p.Name + " to restart it on its volume"}
			}
		}
	}
	voters, healthy, down := quorum(o)
	if healthy*2 <= voters {
		return Action{Kind: ActionQuorumLost, Message: fmt.Sprintf("%d of %d voting members are down (%s): quorum is lost; nothing is deleted, restore the cluster from a backup with an EtcdRestore", voters-healthy, voters, strings.Join(down, ", "))}
	}
	for _, name := range sortedPods(o.Pods) {
		if p := o.Pods[name]; !p.Terminating {
			if _, ok := members[name]; !ok {
				return Action{Kind: ActionDeletePod, Pod: name, Message: "deleting pod " + name + ": it is not a member"}
			}
		}
	}
	for _, m := range o.Members {
		p, ok := o.Pods[m.PodName()]
		switch {
		case !ok && !m.Started():
			return Action{Kind: ActionCreatePod, MemberID: m.ID, Pod: m.PodName(), Message: "creating the pod of added member " + m.PodName()}
		case !ok:
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: "removing member " + m.PodName() + ": its pod and data are gone; a new member replaces it"}
		case p.Terminating:
			return Action{Kind: ActionWait, Pod: p.Name, Message: "waiting for pod " + p.Name + " to terminate"}
		case p.Failed() && !d.PVC:
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: p.Name, Message: "removing member " + p.Name + ": its pod failed and its data is gone; a new member replaces it"}
		}
	}
	for _, m := range o.Members {
		if m.Started() && m.IsLearner && o.Healthy(m.ID) {
			return Action{Kind: ActionPromote, MemberID: m.ID, Pod: m.PodName(), Message: "promoting learner " + m.PodName()}
		}
	}
	for _, m := range o.Members {
		s := o.Status[m.ID]
		if !o.Healthy(m.ID) || m.IsLearner {
			return Action{Kind: ActionWait, Pod: m.PodName(), Message: "waiting for member " + m.PodName() + " to become healthy"}
		}
		if p := o.Pods[m.PodName()]; p.Version != "" && s.Version != "" && p.Version != s.Version {
			return Action{Kind: ActionWait, Pod: p.Name, Message: "waiting for member " + p.Name + " to restart on " + p.Version}
		}
	}
	if n := len(o.Members); n < d.Size {
		name := NextMemberName(d.Name, o)
		return Action{Kind: ActionAddMember, Pod: name, Message: fmt.Sprintf("adding member %s (%d -> %d)", name, n, n+1)}
	} else if n > d.Size {
		m := removalCandidate(o)
		return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: fmt.Sprintf("removing member %s (%d -> %d)", m.PodName(), n, n-1)}
	}
	if d.Version != "" {
		if m, ok := upgradeCandidate(d.Version, o); ok {
			return Action{Kind: ActionUpgradeMember, MemberID: m.ID, Pod: m.PodName(), Version: d.Version, Message: "upgrading member " + m.PodName() + " to " + d.Version}
		}
	}
	return Action{Kind: ActionNone}
}

func nextUnreachable(d Desired, o Observed) Action {
	live := 0
	for _, p := range o.Pods {
		if !p.Terminating {
			live++
		}
	}
	if d.PVC {
		for _, name := range sortedKeys(o.PVCs) {
			if _, ok := o.Pods[name]; !ok {
				return Action{Kind: ActionRecreatePod, Pod: name, Message: "recreating the pod of member " + name + " on its volume"}
			}
		}
	}
	switch {
	case live > 0:
		return Action{Kind: ActionWait, Message: "no member answers yet"}
	case d.SeedMember != "":
		return Action{Kind: ActionWaitForSeed, Pod: d.SeedMember, Message: "waiting for the restore operator's seed member " + d.SeedMember}
	case o.Formed:
		return Action{Kind: ActionQuorumLost, Message: "every member pod is gone and with it the data: quorum is lost; nothing is recreated, restore the cluster from a backup with an EtcdRestore"}
	case len(o.Pods) > 0:
		return Action{Kind: ActionWait, Message: "waiting for old pods to terminate"}
	}
	name := NextMemberName(d.Name, o)
	return Action{Kind: ActionCreateSeed, Pod: name, Message: "creating seed member " + name}
}

// quorum counts voting members, the ones among them that answer (leaderless or not), and
// names the ones down.
func quorum(o Observed) (voters, healthy int, down []string) {
	for _, m := range o.Members {
		if m.IsLearner {
			continue
		}
		voters++
		if _, ok := o.Status[m.ID]; ok {
			healthy++
		} else {
			down = append(down, m.PodName())
		}
	}
	return voters, healthy, down
}

// removalCandidate picks the member to remove when scaling down: a learner or an unhealthy
// member first, never the leader if another will do, else the newest member.
func removalCandidate(o Observed) Member {
	ms := append([]Member(nil), o.Members...)
	leader := leaderID(o)
	score := func(m Member) int {
		switch {
		case m.IsLearner || !o.Healthy(m.ID):
			return 0
		case m.ID != leader:
			return 1
		}
		return 2
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if si, sj := score(ms[i]), score(ms[j]); si != sj {
			return si < sj
		}
		return memberIndex(ms[i].PodName()) > memberIndex(ms[j].PodName())
	})
	return ms[0]
}

// upgradeCandidate picks the next member whose pod does not run version: followers first,
// the leader last.
func upgradeCandidate(version string, o Observed) (Member, bool) {
	leader := leaderID(o)
	var last *Member
	for i, m := range o.Members {
		if p := o.Pods[m.PodName()]; p.Version == version {
			continue
		}
		if m.ID == leader {
			last = &o.Members[i]
			continue
		}
		return m, true
	}
	if last != nil {
		return *last, true
	}
	return Member{}, false
}

func leaderID(o Observed) uint64 {
	for _, s := range o.Status {
		if s.Leader != 0 {
			return s.Leader
		}
	}
	return 0
}

// NextMemberName returns <cluster>-<n> with n one above every index in use by a member, a pod
// or a volume, so a name is not reused while anything of its previous owner remains.
func NextMemberName(cluster string, o Observed) string {
	max := -1
	see := func(name string) {
		if strings.HasPrefix(name, cluster+"-") {
			if i := memberIndex(name); i > max {
				max = i
			}
		}
	}
	for _, m := range o.Members {
		see(m.PodName())
	}
	for name := range o.Pods {
		see(name)
	}
	for name := range o.PVCs {
		see(name)
	}
	return fmt.Sprintf("%s-%d", cluster, max+1)
}

func memberIndex(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

func sortedPods(m map[string]PodState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
