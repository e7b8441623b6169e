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
//  1. Enable the downgrade (validated first), through a member still on the newer release
//     that does not report it enabled to d.Version's minor release: the cluster then runs
//     the older protocol and its members migrate their storage.
//  2. Wait until every member still on the newer release reports its storage migrated
//     (StorageVersion at the older minor): only then may a member run the older release on
//     its data.
//  3. Move member m: in place (its image patched; it restarts on its data with its pod's
//     flags) when the older release knows every flag of its pod. Otherwise its pod must be
//     made again with the older release's flags: on a volume it is evicted and made again on
//     it (the leader after leadership moved); without one it is removed and a new member on
//     d.Version replaces it. A cluster of fewer than three members cannot lose one: refused.
//
// When every member runs the older release, etcd ends the downgrade itself.
func nextDowngrade(d Desired, o Observed, m Member) Action {
	minor := MinorOf(d.Version)
	for _, mm := range o.Members {
		if s := o.Status[mm.ID]; IsDowngrade(s.Version, d.Version) && MinorOf(s.DowngradeTarget) != minor {
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
	if n := len(o.Members); n < 3 {
		how := "delete its pod yourself: it comes back on its volume with " + minor + "'s flags"
		if !d.PVC {
			how = "without a volume its data lives only in its pod: scale the cluster to 3 first"
		}
		return Action{Kind: ActionRollBlocked, Pod: m.PodName(), Message: fmt.Sprintf("%s, and a cluster of %d members cannot lose one without losing quorum; %s", msg, n, how)}
	}
	if leader := leaderID(o); m.ID == leader {
		to := moveLeaderTarget(o, leader)
		return Action{Kind: ActionMoveLeader, MemberID: to.ID, Pod: m.PodName(), Message: msg + "; moving leadership to " + to.PodName() + " first"}
	}
	if !d.PVC {
		return Action{Kind: ActionRemoveMember, MemberID: m.ID, Pod: m.PodName(), Message: msg + "; without a volume it is removed and a new member on " + d.Version + " replaces it"}
	}
	return Action{Kind: ActionRollMember, MemberID: m.ID, Pod: m.PodName(), Message: msg + "; its pod is evicted and made again on its volume"}
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
