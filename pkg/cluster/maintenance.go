package cluster

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// MaintenancePolicy is what the spec asks of a cluster's upkeep, with the state the
// controller keeps in status (when each member was last defragmented).
type MaintenancePolicy struct {
	// QuotaBytes is the backend quota the members run with.
	QuotaBytes int64
	// FragmentedPercent: a member is defragmented when at least this share of its database
	// file is free pages (and at least MinFreeBytes); 0 turns this off.
	FragmentedPercent int
	// MinFreeBytes is the free space below which fragmentation is not worth a defragmentation.
	MinFreeBytes int64
	// RoundDue is when the scheduled defragmentation round that is due now became due: every
	// member last defragmented before it is defragmented. Zero when no round is due.
	RoundDue time.Time
	// Requested: a round requested on demand is under way (the EtcdCluster annotation
	// etcd.database.coreos.com/defragment-requested-at): every member not in RequestDone is
	// defragmented, as in a scheduled round.
	Requested bool
	// RequestDone are the members (pod names) the requested round defragmented already.
	RequestDone map[string]bool
	// LastDefragmented is when the operator last defragmented each member (by ID).
	LastDefragmented map[uint64]time.Time
	// Now is the time of the pass.
	Now time.Time
	// QuotaExceeded: an earlier pass found that the data itself fills the quota (the cluster
	// says QuotaExceeded); full members are not defragmented again for it.
	QuotaExceeded bool
}

// MaintenanceKind is the kind of the next upkeep step.
type MaintenanceKind string

// Upkeep steps, one per pass, only on a cluster whose members are all started, voting and
// healthy (an alarm aside).
const (
	MaintenanceNone MaintenanceKind = "None"
	// MaintenanceDefragment defragments one member: followers first, the leader last.
	MaintenanceDefragment MaintenanceKind = "Defragment"
	// MaintenanceDisarm clears the NOSPACE alarms once every member has room again.
	MaintenanceDisarm MaintenanceKind = "Disarm"
	// MaintenanceRoundDone: every member was defragmented in the scheduled round that is due,
	// and in the requested round under way.
	MaintenanceRoundDone MaintenanceKind = "RoundDone"
	// MaintenanceQuotaTooSmall: NOSPACE, and after compaction and defragmentation the data
	// itself still fills the quota; the alarm stays until a person raises the quota or deletes
	// keys.
	MaintenanceQuotaTooSmall MaintenanceKind = "QuotaTooSmall"
	// MaintenanceReplaceCorrupt: a CORRUPT alarm, and a member proven corrupt was replaced
	// (PlanCorrupt) and the alarms cleared, or the alarms named only members already gone
	// and were cleared.
	MaintenanceReplaceCorrupt MaintenanceKind = "ReplaceCorrupt"
	// MaintenanceBlocked: an alarm the operator does not clear (CORRUPT) is active, or a
	// member is not healthy: nothing is done.
	MaintenanceBlocked MaintenanceKind = "Blocked"
)

// MaintenanceAction is the next upkeep step.
type MaintenanceAction struct {
	Kind     MaintenanceKind
	MemberID uint64
	Pod      string
	// Alarms are the alarms a Disarm clears.
	Alarms  []Alarm
	Message string
}

// Thresholds of the upkeep planner.
const (
	// noSpaceMinFree: during NOSPACE recovery a member with at least this much free space in
	// its file is defragmented.
	noSpaceMinFree = 1 << 20
	// noSpaceHeadroomPercent: the NOSPACE alarm is cleared once every member's file uses less
	// than this share of the quota (below it, writes have room to go on).
	noSpaceHeadroomPercent = 90
	// nearQuotaPercent: see NearQuota.
	nearQuotaPercent = 80
	// MinDefragInterval: a member is defragmented for its fragmentation at most this often, so
	// that a write load that fragments the file as fast as it is compacted does not keep a
	// member blocked.
	MinDefragInterval = 10 * time.Minute
)

// NoSpace reports whether alarms hold a NOSPACE alarm.
func NoSpace(alarms []Alarm) bool {
	for _, a := range alarms {
		if a.Type == AlarmNoSpace {
			return true
		}
	}
	return false
}

// NextMaintenance picks the single next upkeep step of a cluster whose membership step is
// None (every member started, voting and answering). During a NOSPACE alarm the caller has
// compacted the history first and o holds the members' status after that compaction.
func NextMaintenance(p MaintenancePolicy, o Observed, alarms []Alarm) MaintenanceAction {
	var other []string
	for _, a := range alarms {
		if a.Type != AlarmNoSpace {
			other = append(other, fmt.Sprintf("%s (member %x)", a.Type, a.MemberID))
		}
	}
	if len(other) > 0 {
		return MaintenanceAction{Kind: MaintenanceBlocked, Message: "alarm " + strings.Join(other, ", ") + " is active: the operator does not clear it and does no upkeep; see the etcd documentation on data corruption"}
	}
	for _, m := range o.Members {
		if !m.Started() || m.IsLearner || !o.Healthy(m.ID) {
			return MaintenanceAction{Kind: MaintenanceBlocked, Message: "member " + m.PodName() + " is not a healthy voting member: no upkeep while the cluster is degraded"}
		}
	}
	if NoSpace(alarms) {
		return nextNoSpace(p, o, alarms)
	}
	due := func(m Member) bool {
		s := o.Status[m.ID]
		last := p.LastDefragmented[m.ID]
		if (!p.RoundDue.IsZero() && last.Before(p.RoundDue)) || (p.Requested && !p.RequestDone[m.PodName()]) {
			return true
		}
		free := s.DBSize - s.DBSizeInUse
		return p.FragmentedPercent > 0 && free >= p.MinFreeBytes && free*100 >= int64(p.FragmentedPercent)*s.DBSize &&
			p.Now.Sub(last) >= MinDefragInterval
	}
	if m, ok := followerFirst(o, due); ok {
		s := o.Status[m.ID]
		why := fmt.Sprintf("%d of %d bytes free", s.DBSize-s.DBSizeInUse, s.DBSize)
		switch {
		case !p.RoundDue.IsZero() && p.LastDefragmented[m.ID].Before(p.RoundDue):
			why = "the scheduled round of " + p.RoundDue.UTC().Format(time.RFC3339) + ", " + why
		case p.Requested && !p.RequestDone[m.PodName()]:
			why = "the requested round, " + why
		}
		return MaintenanceAction{Kind: MaintenanceDefragment, MemberID: m.ID, Pod: m.PodName(), Message: "defragmenting member " + m.PodName() + ": " + why}
	}
	var rounds []string
	if !p.RoundDue.IsZero() {
		rounds = append(rounds, "the round of "+p.RoundDue.UTC().Format(time.RFC3339))
	}
	if p.Requested {
		rounds = append(rounds, "the requested round")
	}
	if len(rounds) > 0 {
		return MaintenanceAction{Kind: MaintenanceRoundDone, Message: "every member was defragmented in " + strings.Join(rounds, " and ")}
	}
	return MaintenanceAction{Kind: MaintenanceNone}
}

func nextNoSpace(p MaintenancePolicy, o Observed, alarms []Alarm) MaintenanceAction {
	if m, ok := followerFirst(o, func(m Member) bool {
		s := o.Status[m.ID]
		return s.DBSize-s.DBSizeInUse >= noSpaceMinFree
	}); ok {
		s := o.Status[m.ID]
		return MaintenanceAction{Kind: MaintenanceDefragment, MemberID: m.ID, Pod: m.PodName(), Message: fmt.Sprintf(
			"NOSPACE: defragmenting member %s after compaction (%d of %d bytes free)", m.PodName(), s.DBSize-s.DBSizeInUse, s.DBSize)}
	}
	// Followers apply a compaction on their own time, so right after it a member may not show
	// its free pages yet: a full member that this recovery has not defragmented is
	// defragmented before the quota is called too small (calling it early was a race seen in
	// CI: QuotaExceeded warnings while the members were still being defragmented).
	if !p.QuotaExceeded {
		if m, ok := followerFirst(o, func(m Member) bool {
			return isFull(p, o.Status[m.ID]) && p.Now.Sub(p.LastDefragmented[m.ID]) >= MinDefragInterval
		}); ok {
			s := o.Status[m.ID]
			return MaintenanceAction{Kind: MaintenanceDefragment, MemberID: m.ID, Pod: m.PodName(), Message: fmt.Sprintf(
				"NOSPACE: defragmenting member %s after compaction (%d of %d bytes free so far; it may not have applied the compaction yet)", m.PodName(), s.DBSize-s.DBSizeInUse, s.DBSize)}
		}
	}
	var full []string
	for _, m := range o.Members {
		if s := o.Status[m.ID]; isFull(p, s) {
			full = append(full, fmt.Sprintf("%s uses %d bytes", m.PodName(), s.DBSize))
		}
	}
	if len(full) > 0 {
		sort.Strings(full)
		return MaintenanceAction{Kind: MaintenanceQuotaTooSmall, Message: fmt.Sprintf(
			"NOSPACE: after compaction and defragmentation the data still fills the backend quota of %d bytes (%s): raise spec.maintenance.quotaBackendBytes or delete keys; the alarm stays",
			p.QuotaBytes, strings.Join(full, ", "))}
	}
	var noSpace []Alarm
	for _, a := range alarms {
		if a.Type == AlarmNoSpace {
			noSpace = append(noSpace, a)
		}
	}
	return MaintenanceAction{Kind: MaintenanceDisarm, Alarms: noSpace, Message: "NOSPACE: every member has room again after compaction and defragmentation: clearing the alarm"}
}

// isFull reports whether a member's database file holds noSpaceHeadroomPercent of the quota or
// more: until it is below, the NOSPACE alarm is not cleared.
func isFull(p MaintenancePolicy, s EndpointStatus) bool {
	return s.DBSize*100 >= int64(noSpaceHeadroomPercent)*p.QuotaBytes
}

// followerFirst returns the first member (by name) for which want holds, the leader only when
// no follower qualifies.
func followerFirst(o Observed, want func(Member) bool) (Member, bool) {
	leader := leaderID(o)
	ms := append([]Member(nil), o.Members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].PodName() < ms[j].PodName() })
	var last *Member
	for i, m := range ms {
		if !want(m) {
			continue
		}
		if m.ID == leader {
			last = &ms[i]
			continue
		}
		return m, true
	}
	if last != nil {
		return *last, true
	}
	return Member{}, false
}

// NearQuota reports whether a member's database file uses at least nearQuotaPercent of the
// quota. A NOSPACE alarm changes no object the operator watches, so on a steady cluster it is
// seen at the next periodic pass; near the quota the controller looks more often, so that an
// alarm is handled in seconds, not up to a minute later (the chaos kind nospace-under-load
// measured 53 s once, against 1-2 s when another change happened to trigger a pass).
func NearQuota(quotaBytes int64, o Observed) bool {
	if quotaBytes <= 0 {
		return false
	}
	for _, s := range o.Status {
		if s.DBSize*100 >= int64(nearQuotaPercent)*quotaBytes {
			return true
		}
	}
	return false
}
