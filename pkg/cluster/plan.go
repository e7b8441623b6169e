package cluster

import (
	"fmt"
	"strings"
	"time"
)

// PodState is what the controller observed about one member pod.
type PodState struct {
	Name string
	// Phase is the pod phase: Pending, Running, Succeeded, Failed (or Unknown).
	Phase string
	// Terminating is true once the pod has a deletion timestamp.
	Terminating bool
	// Stuck is true once the pod has been terminating for longer than its grace period plus
	// the controller's own grace (its node is gone or NotReady): its member does not come
	// back and its name is not freed by itself.
	Stuck bool
	// Version is the etcd version of the pod's image tag (without "v").
	Version string
	// InitialCluster are the member names in the pod's --initial-cluster flag: the membership
	// the member was told to join with (nil when unknown).
	InitialCluster []string
	// SpecHash is the hash of the spec the pod was made from ("" for a pod made before hashes
	// were recorded: never rolled).
	SpecHash string
	// UnreadyFor is how long the pod has been running with its etcd not ready (its Ready
	// condition False since then), terminating or not; 0 for a pod that is ready or not running.
	UnreadyFor time.Duration
	// Restarts is how many times the pod's etcd container restarted (a crash loop restarts
	// it; an etcd that runs but does not answer does not).
	Restarts int32
	// Flags are the etcd command-line flags of the pod ("--name=value"): a downgrade checks
	// that the older release knows every one before it moves the pod in place.
	Flags []string
	// ForcedNewCluster is true for a pod made with --force-new-cluster (a recovery from the
	// survivors): nothing joins its member until it is made again without the flag.
	ForcedNewCluster bool
	// NodeLostFor is how long the pod's node has been lost: its Node's Ready condition not
	// True (the node controller turns it Unknown when the kubelet stops reporting) since then,
	// or its Node deleted. 0 when the node is Ready or could not be read.
	NodeLostFor time.Duration
	// Coreos is true for a pod coreos/etcd-operator made (its label etcd_node, not this
	// operator's member label): a member of a cluster being taken over (Desired.TakeOver),
	// replaced by one of this operator's own and removed, one at a time.
	Coreos bool
}

// NodeLostGrace is how long a member's node must have been lost (Ready not True; the node
// controller's own grace, 40-50 s of silence, comes before that) before an emptyDir member on it
// that does not answer is removed from the membership and replaced, without waiting for the
// taint manager's eviction: a node that flaps back within it costs nothing.
const NodeLostGrace = 15 * time.Second

// onLostNode reports whether the member of pod p is gone with its node: the node lost for
// NodeLostGrace and the member not answering this pass. Its emptyDir data cannot come back.
func (o Observed) onLostNode(id uint64, p PodState) bool {
	return p.NodeLostFor >= NodeLostGrace && !o.Healthy(id)
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
	// Linearizable is true when the member list went through the leader; false when it is
	// one member's own (serializable) view, which may be stale.
	Linearizable bool
	// ClusterID is the etcd cluster ID of the member that answered the member list.
	ClusterID uint64
	// RecordedClusterID is the cluster ID recorded in status (0: none recorded yet).
	RecordedClusterID uint64
	Members           []Member
	// Status holds the answers of the members that answered, by member ID. A member that
	// answers with errors (no leader, an alarm) is up but not healthy.
	Status map[uint64]EndpointStatus
	// Pods are the member pods of the cluster (controlled by it), by name.
	Pods map[string]PodState
	// PVCs are the names of the members that have a data volume claim controlled by the cluster.
	PVCs map[string]bool
	// ReservedNames are the names of pods and volumes that carry the cluster's labels but are
	// controlled by something else (an old incarnation of the cluster, a restore's retained
	// volumes, a stranger): never members, never touched, never handed out as a member name.
	ReservedNames map[string]bool
	// RecreateVersions are the versions recorded on member volumes (by name) for the pods made
	// again on them (AnnotationRecreateVersion): a downgrade's own.
	RecreateVersions map[string]string
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
	// SeedMember is set for a cluster built from a backup (bootstrap.restore): the member
	// the others are checked against.
	SeedMember string
	// RestoredMembers are the members restored from the backup at once
	// (bootstrap.restore.members, SeedMember among them); empty: the seed alone.
	RestoredMembers []string
	// BuildRestored is true when this operator builds the restored members itself
	// (bootstrap.restore.source) and the restore has not failed; false when the restore
	// operator seeds them (bootstrap.restore without source).
	BuildRestored bool
	// SpecHash is the hash of the pod spec members should run (member.SpecHash); members whose
	// pods carry another are rolled, one at a time. Empty: nothing is rolled.
	SpecHash string
	// ReplaceAfter is how long a voting member may stay unhealthy, its pod running but not
	// ready, while every other voting member is healthy, before it is replaced
	// (ActionReplaceMember); 0: never.
	ReplaceAfter time.Duration
	// TakeOver is the user's go-ahead to take over a cluster whose members coreos/etcd-operator
	// made (PodState.Coreos): see nextTakeOver.
	TakeOver bool
}

// dataInPod reports whether the member of pod p keeps its data in the pod (emptyDir), so that
// it is gone with the pod: every member without volumes, and a coreos member being taken over
// whatever the spec asks of this operator's own (a takeover refuses coreos members on volumes).
func (d Desired) dataInPod(p PodState) bool { return !d.PVC || p.Coreos }

// AllAnswer reports whether every member named answers without errors (names empty: true).
func (o Observed) AllAnswer(names []string) bool {
	return o.answering(names) == len(names)
}

func (o Observed) answering(names []string) int {
	n := 0
	for _, m := range o.Members {
		for _, name := range names {
			if m.Name == name && o.Healthy(m.ID) {
				n++
			}
		}
	}
	return n
}

// ActionKind is the kind of the next step.
type ActionKind string

// The steps the controller can take; exactly one per pass.
const (
	ActionNone           ActionKind = "None"           // nothing to do: the cluster matches the spec
	ActionWait           ActionKind = "Wait"           // something is in progress; observe again later
	ActionWaitForSeed    ActionKind = "WaitForSeed"    // bootstrap.restore: the seed is not there or not formed yet
	ActionQuorumLost     ActionKind = "QuorumLost"     // a majority of voting members is down: touch nothing
	ActionCreateSeed     ActionKind = "CreateSeed"     // create the first member's pod (new cluster)
	ActionRestoreMembers ActionKind = "RestoreMembers" // create the pods of the members restored from a backup at once
	ActionCreatePod      ActionKind = "CreatePod"      // create the pod of a member added but never started
	ActionRecreatePod    ActionKind = "RecreatePod"    // create the pod of a member on its existing volume
	ActionAddMember      ActionKind = "AddMember"      // add a learner through the membership API
	ActionPromote        ActionKind = "Promote"        // promote a started learner
	ActionRemoveMember   ActionKind = "RemoveMember"   // remove a member, then delete its pod and volume
	ActionDeletePod      ActionKind = "DeletePod"      // delete a pod (and volume) that has no member
	ActionDeleteFailed   ActionKind = "DeleteFailed"   // delete a failed pod whose data lives on a volume
	ActionUpgradeMember  ActionKind = "UpgradeMember"  // move one member's pod to Version
	// ActionReplaceMember removes a voting member that stayed unhealthy while the others are
	// healthy (Desired.ReplaceAfter) and deletes its pod; its volume is kept, never reused, and
	// a fresh member is added in its place by the next steps.
	ActionReplaceMember ActionKind = "ReplaceMember"
	// ActionRollMember: a member on a volume whose pod is out of date is evicted; its pod is
	// then recreated on its volume with the current spec (RecreatePod).
	ActionRollMember ActionKind = "RollMember"
	// ActionMoveLeader: the leader's pod is out of date and the followers' are not: leadership
	// moves to the follower MemberID before the leader's pod is rolled.
	ActionMoveLeader ActionKind = "MoveLeader"
	// ActionRestartForced: the member started with --force-new-cluster stands alone; its pod
	// is deleted (its volume kept) and made again without the flag (RecreatePod).
	ActionRestartForced ActionKind = "RestartForced"
	// ActionEnableDowngrade: spec.version is one minor release below the members' (3.6 ->
	// 3.5): etcd's downgrade to Version's minor release is validated and enabled before any
	// member moves.
	ActionEnableDowngrade ActionKind = "EnableDowngrade"
	// ActionCancelDowngrade: a downgrade is enabled but spec.version went back up: it is
	// cancelled before any member moves up again.
	ActionCancelDowngrade ActionKind = "CancelDowngrade"
	// ActionRollBlocked: a member's pod is out of date but rolling it would lose data (a
	// one-member cluster without a volume); nothing changes, the message says why.
	ActionRollBlocked ActionKind = "RollBlocked"

	// ActionMembershipUnverified: the step needs a linearizable member list and this one is
	// not; nothing changes.
	ActionMembershipUnverified ActionKind = "MembershipUnverified"
	// ActionClusterIDMismatch: the members that answer belong to another etcd cluster than the
	// recorded one; nothing changes.
	ActionClusterIDMismatch ActionKind = "ClusterIDMismatch"
)

// NeedsVerifiedMembership reports whether a step changes the membership or deletes anything
// that holds data, and so may only be taken on a linearizable member list of the recorded
// cluster. DeleteFailed is not one of them: it deletes only a failed pod whose data stays on
// its volume (the pod is recreated on it, like RecreatePod), and it is what brings a PVC cluster
// back after its members' pods failed together (evictions), when no linearizable list exists.
func (k ActionKind) NeedsVerifiedMembership() bool {
	switch k {
	case ActionRemoveMember, ActionDeletePod, ActionPromote, ActionAddMember, ActionCreatePod, ActionUpgradeMember, ActionRollMember, ActionMoveLeader,
		ActionReplaceMember, ActionRestartForced, ActionEnableDowngrade, ActionCancelDowngrade:
		return true
	}
	return false
}

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
// returns a step that deletes anything while a majority of voting members is down, and never
// a membership change or deletion decided from a member list that is not linearizable or
// that comes from another cluster than the recorded one.
func Next(d Desired, o Observed) Action {
	return verified(o, versioned(d, o, next(d, o)))
}

// verified replaces a step that needs verified membership by a refusal when o is not.
func verified(o Observed, act Action) Action {
	if !act.Kind.NeedsVerifiedMembership() {
		return act
	}
	switch {
	case o.RecordedClusterID != 0 && o.ClusterID != o.RecordedClusterID:
		return Action{Kind: ActionClusterIDMismatch, Pod: act.Pod, Message: fmt.Sprintf(
			"the members that answer belong to etcd cluster %x, not to %x recorded in status.clusterID: nothing is changed (held back: %s)", o.ClusterID, o.RecordedClusterID, act.Message)}
	case !o.Linearizable:
		return Action{Kind: ActionMembershipUnverified, Pod: act.Pod, Message: "the member list could not be read linearizably (no quorum, or the answering member is cut off from the leader): nothing is changed (held back: " + act.Message + ")"}
	}
	return act
}

func next(d Desired, o Observed) Action {
	if d.SeedMember != "" && !o.Formed {
		// Every member restored from the backup is created at once (with bootstrap.restore.source
		// by this operator, otherwise by the restore operator); then this operator waits
		// until they answer and records their cluster ID.
		if missing := d.missingRestored(o); len(missing) > 0 && d.BuildRestored {
			return Action{Kind: ActionRestoreMembers, Pod: missing[0], Message: "creating the pods of members " + strings.Join(missing, ", ") + ", each restoring the backup"}
		}
		if o.Reachable && !o.AllAnswer(d.RestoredMembers) {
			// The cluster is not taken over (nor its members judged) before every member restored
			// from the backup runs: one that is still starting is not a lost member.
			return Action{Kind: ActionWait, Pod: d.SeedMember, Message: fmt.Sprintf("%d of the %d members restored from the backup answer (%s): recording the cluster ID once every one does",
				o.answering(d.RestoredMembers), len(d.RestoredMembers), strings.Join(d.RestoredMembers, ", "))}
		}
		if o.Reachable {
			return Action{Kind: ActionWait, Pod: d.SeedMember, Message: "seed member " + d.SeedMember + " answers: recording its cluster ID before any other step"}
		}
		if d.BuildRestored {
			return Action{Kind: ActionWaitForSeed, Pod: d.SeedMember, Message: "waiting for the members restored from the backup to start"}
		}
		return Action{Kind: ActionWaitForSeed, Pod: d.SeedMember, Message: "waiting for the restore operator's seed member " + d.SeedMember}
	}
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
	if act, ok := nextForced(o); ok {
		return act
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
	// Shrinking: a learner that never started or is not healthy (its pod crash-loops) goes
	// first, before anything waits for it. A takeover's own learner is one member above Size.
	if n := len(o.Members); n > d.Size+takeOverSurge(d, o) {
		for _, m := range o.Members {
			if m.IsLearner && (!m.Started() || !o.Healthy(m.ID)) {
				return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: fmt.Sprintf("removing learner %s, which is not healthy (%d -> %d)", m.PodName(), n, n-1)}
			}
		}
	}
	for _, m := range o.Members {
		p, ok := o.Pods[m.PodName()]
		switch {
		case ok && !m.Started() && !p.Terminating && staleInitialCluster(p, o.Members):
			// Its pod was made for a membership that changed before it started (a member removed
			// in between): etcd refuses to start with it, forever. It never started, so it holds no
			// data: a new pod (and volume) with the current membership.
			return Action{Kind: ActionDeletePod, MemberID: m.ID, Pod: p.Name, Message: "deleting pod " + p.Name + ": member " + m.PodName() +
				" never started and its pod names a membership that has changed (" + strings.Join(p.InitialCluster, ",") + "); it is recreated with the current one"}
		case !ok && !m.Started():
			return Action{Kind: ActionCreatePod, MemberID: m.ID, Pod: m.PodName(), Message: "creating the pod of added member " + m.PodName()}
		case !ok:
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: "removing member " + m.PodName() + ": its pod and data are gone; a new member replaces it"}
		case ok && d.dataInPod(p) && o.onLostNode(m.ID, p):
			// Removed now rather than when the taint manager evicts the pod a minute or more later:
			// quorum holds (checked above) and the removal keeps it, since the member is down.
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: p.Name, Message: fmt.Sprintf("removing member %s: its node has been lost for %s and its etcd does not answer; "+
				"its data goes with the node (emptyDir), a new member replaces it", p.Name, p.NodeLostFor.Round(time.Second))}
		case p.Terminating && p.Stuck && d.dataInPod(p):
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: p.Name, Message: "removing member " + p.Name + ": its pod is stuck terminating (node gone?) and its data goes with it; a new member replaces it"}
		case p.Terminating && p.Stuck:
			// Its volume may have gone with its node (a local volume): it is replaced on a new
			// volume, its own kept, once it is proven the one bad member (nextReplace).
			if act, ok := nextReplace(d, o); ok && act.Pod == p.Name {
				return act
			}
			return Action{Kind: ActionWait, Pod: p.Name, Message: "waiting for pod " + p.Name + ", stuck terminating (node lost?): its volume keeps the member's data; " +
				"it is replaced on a new volume, its own kept, once its etcd has been down for spec.memberReplacement.afterSeconds while every other member is healthy"}
		case p.Terminating:
			return Action{Kind: ActionWait, Pod: p.Name, Message: "waiting for pod " + p.Name + " to terminate"}
		case p.Failed() && d.dataInPod(p):
			return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: p.Name, Message: "removing member " + p.Name + ": its pod failed and its data is gone; a new member replaces it"}
		}
	}
	for _, m := range o.Members {
		if m.Started() && m.IsLearner && o.Healthy(m.ID) {
			return Action{Kind: ActionPromote, MemberID: m.ID, Pod: m.PodName(), Message: "promoting learner " + m.PodName()}
		}
	}
	if act, ok := nextReplace(d, o); ok {
		return act
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
	if act, ok := nextTakeOver(d, o); ok {
		return act
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
			return nextVersion(d, o, m)
		}
	}
	if d.SpecHash != "" {
		return nextRoll(d, o)
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
	case o.Formed:
		return Action{Kind: ActionQuorumLost, Message: "every member pod is gone and with it the data: quorum is lost; nothing is recreated, restore the cluster from a backup with an EtcdRestore"}
	case len(o.Pods) > 0:
		return Action{Kind: ActionWait, Message: "waiting for old pods to terminate"}
	}
	name := NextMemberName(d.Name, o)
	return Action{Kind: ActionCreateSeed, Pod: name, Message: "creating seed member " + name}
}
