package cluster

import (
	"cmp"
	"fmt"
	"strings"
)

// nextVersion is the step that moves member m (upgradeCandidate's pick: followers first, the
// leader last) to d.Version. next takes it only on a cluster at its size whose members are all
// healthy voters on their pods' versions.
//
// An upgrade patches the member's image in place (ActionUpgradeMember), after cancelling a
// downgrade that is still enabled (spec.version went back up while one ran: etcd's rollback).
// A downgrade (3.6 -> 3.5) is nextDowngrade.
func nextVersion(d Desired, o Observed, m Member) Action {
	if IsDowngrade(o.Pods[m.PodName()].Version, d.Version) {
		return nextDowngrade(d, o, m)
	}
	if by, t := downgradeTarget(o); t != "" && IsDowngrade(d.Version, t) {
		// Through a member that reports it: one of the newer release.
		return Action{Kind: ActionCancelDowngrade, Pod: by, Message: fmt.Sprintf("cancelling etcd's downgrade to %s before upgrading member %s to %s: spec.version went back up", t, m.PodName(), d.Version)}
	}
	return Action{Kind: ActionUpgradeMember, MemberID: m.ID, Pod: m.PodName(), Version: d.Version, Message: "upgrading member " + m.PodName() + " to " + d.Version}
}

// nextDowngrade follows etcd's downgrade procedure (3.6 -> 3.5), one step per pass:
//  0. Refuse, before anything starts, when a member's pod must be made again (its flags are
//     unknown to the older release) and cannot be: without volumes (only a new member could
//     replace it, and none may join during a downgrade), or in a cluster of fewer than three.
//  1. Enable the downgrade (validated first), through a member still on the newer release
//     that does not report it enabled to d.Version's minor release: the cluster then runs
//     the older protocol and its members migrate their storage. Not once a member runs the
//     older release (after a cancel for a member to join): the cluster runs its protocol
//     already, and etcd would refuse.
//  2. Wait until every member still on the newer release reports its storage migrated
//     (StorageVersion at the older minor): only then may a member run the older release on
//     its data.
//  3. Move member m: in place (its image patched; it restarts on its data with its pod's
//     flags) when the older release knows every flag of its pod. Otherwise its pod must be
//     made again with the older release's flags: it is evicted and made again on its volume
//     (the leader after leadership moved), which records the version it comes back on.
//
// When every member runs the older release, etcd ends the downgrade itself.
func nextDowngrade(d Desired, o Observed, m Member) Action {
	minor := MinorOf(d.Version)
	// Before anything starts: every pod etcd 3.5 cannot run in place must be made again, on
	// its volume, one at a time while the others keep the quorum.
	for _, mm := range o.Members {
		p := o.Pods[mm.PodName()]
		unknown := FlagsUnknownTo(d.Version, p.Flags)
		if len(unknown) == 0 || !IsDowngrade(p.Version, d.Version) {
			continue
		}
		why := fmt.Sprintf("cannot downgrade to %s: the pod of member %s has flags etcd %s does not know (%s) and must be made again", d.Version, mm.PodName(), minor, strings.Join(unknown, ", "))
		switch n := len(o.Members); {
		case !d.PVC:
			return Action{Kind: ActionRollBlocked, Pod: mm.PodName(), Message: why + "; without volumes that means a new member, and etcd lets no member join during a downgrade. Set spec.version back to " + p.Version + ", or restore a backup into a new 3.5 cluster"}
		case n < 3:
			return Action{Kind: ActionRollBlocked, Pod: mm.PodName(), Message: fmt.Sprintf("%s, and a cluster of %d members cannot lose one without losing quorum. Scale it to 3 first, or set spec.version back to %s", why, n, p.Version)}
		}
	}
	for _, mm := range o.Members {
		if s := o.Status[mm.ID]; IsDowngrade(s.Version, d.Version) && MinorOf(s.DowngradeTarget) != minor && !runsMinor(o, minor) {
			return Action{Kind: ActionEnableDowngrade, Pod: mm.PodName(), Version: minor, Message: fmt.Sprintf("enabling etcd's downgrade to %s (member %s runs %s)", minor, mm.PodName(), s.Version)}
		}
	}
	for _, mm := range o.Members {
		if s := o.Status[mm.ID]; IsDowngrade(s.Version, d.Version) && MinorOf(s.StorageVersion) != minor {
			return Action{Kind: ActionWait, Pod: mm.PodName(), Message: fmt.Sprintf("downgrading to %s: waiting for member %s to migrate its storage to %s (at %s)",
				d.Version, mm.PodName(), minor, cmp.Or(s.StorageVersion, "unknown"))}
		}
	}
	msg := "downgrading member " + m.PodName() + " to " + d.Version
	unknown := FlagsUnknownTo(d.Version, o.Pods[m.PodName()].Flags)
	if len(unknown) == 0 {
		return Action{Kind: ActionUpgradeMember, MemberID: m.ID, Pod: m.PodName(), Version: d.Version, Message: msg + " in place"}
	}
	msg = fmt.Sprintf("%s: its pod has flags etcd %s does not know (%s)", msg, minor, strings.Join(unknown, ", "))
	if leader := leaderID(o); m.ID == leader {
		to := moveLeaderTarget(o, leader)
		return Action{Kind: ActionMoveLeader, MemberID: to.ID, Pod: m.PodName(), Message: msg + "; moving leadership to " + to.PodName() + " first"}
	}
	// Version: recorded on its volume before the eviction, so the pod comes back on d.Version.
	return Action{Kind: ActionRollMember, MemberID: m.ID, Pod: m.PodName(), Version: d.Version, Message: msg + "; its pod is evicted and made again on its volume"}
}

// versioned gives the steps that make a pod the version it runs (Action.Version), and holds
// back a member joining while etcd's downgrade is enabled: etcd (3.5 and 3.6 alike) admits a
// new member then only if the cluster runs one minor release above the joining member's, and a
// 3.6 -> 3.5 downgrade lowers the cluster to 3.5 at once, so no member of any release could
// join. The downgrade is cancelled first; once the member has joined, it goes on (enabled again
// when no member runs the older release yet: see nextDowngrade).
//
// The version: d.Version, except during a downgrade (a pod still runs a newer minor release
// than d.Version), when a new member, and a member made again on its volume, run the newest
// release a pod runs. That release reads the data of either, whatever the member's storage
// was migrated to when its pod went away; the downgrade moves the member down in its turn. A
// member whose pod the downgrade itself made go (its volume records d.Version) comes back on
// d.Version.
func versioned(d Desired, o Observed, act Action) Action {
	switch act.Kind {
	case ActionAddMember, ActionCreatePod:
		if by, t := downgradeTarget(o); t != "" {
			return Action{Kind: ActionCancelDowngrade, Pod: by, Message: fmt.Sprintf(
				"etcd lets no member join while a downgrade is enabled: cancelling the downgrade to %s first; it goes on once the member has joined (held back: %s)", t, act.Message)}
		}
		act.Version = podVersion(d, o, "")
	case ActionRecreatePod, ActionCreateSeed:
		act.Version = podVersion(d, o, act.Pod)
	}
	return act
}

// podVersion is the version a pod made now runs (see versioned); volume names the member
// made again on its volume ("" for a new member).
func podVersion(d Desired, o Observed, volume string) string {
	newest := NewestPodVersion(o)
	if !IsDowngrade(newest, d.Version) || (volume != "" && o.RecreateVersions[volume] == d.Version) {
		return d.Version
	}
	return newest
}

// NewestPodVersion is the highest etcd version a member pod runs, or "" without pods: in a
// downgrade, the release members are leaving.
func NewestPodVersion(o Observed) string {
	newest := ""
	for _, p := range o.Pods {
		if p.Version != "" && (newest == "" || CompareVersions(p.Version, newest) > 0) {
			newest = p.Version
		}
	}
	return newest
}

// runsMinor reports whether a member runs the minor release minor ("3.5"). Then the cluster
// runs that release's protocol (etcd's cluster version is its members' lowest), with or
// without a downgrade enabled, and etcd refuses to enable one to it: a downgrade cancelled for
// a member to join goes on without.
func runsMinor(o Observed, minor string) bool {
	for _, m := range o.Members {
		if MinorOf(o.Status[m.ID].Version) == minor {
			return true
		}
	}
	return false
}

// downgradeTarget is the downgrade target the members report ("3.5.0") and the first member
// that reports it; "" when none is enabled.
func downgradeTarget(o Observed) (by, target string) {
	for _, m := range o.Members {
		if t := o.Status[m.ID].DowngradeTarget; t != "" {
			return m.PodName(), t
		}
	}
	return "", ""
}
