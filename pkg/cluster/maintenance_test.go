package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestNextMaintenance(t *testing.T) {
	const mib = 1 << 20
	now := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	members := []Member{{ID: 1, Name: "c-0"}, {ID: 2, Name: "c-1"}, {ID: 3, Name: "c-2"}}
	// c-0 leads; sizes per member as (file, in use) in MiB.
	status := func(sizes ...[2]int64) map[uint64]EndpointStatus {
		out := map[uint64]EndpointStatus{}
		for i, s := range sizes {
			out[uint64(i+1)] = EndpointStatus{MemberID: uint64(i + 1), Leader: 1, DBSize: s[0] * mib, DBSizeInUse: s[1] * mib}
		}
		return out
	}
	base := MaintenancePolicy{QuotaBytes: 100 * mib, FragmentedPercent: 50, MinFreeBytes: 10 * mib, Now: now}
	with := func(f func(p *MaintenancePolicy)) MaintenancePolicy {
		p := base
		p.LastDefragmented = map[uint64]time.Time{}
		f(&p)
		return p
	}
	noSpace := []Alarm{{MemberID: 2, Type: AlarmNoSpace}}
	for _, tc := range []struct {
		name    string
		policy  MaintenancePolicy
		status  map[uint64]EndpointStatus
		members []Member
		alarms  []Alarm
		want    MaintenanceKind
		pod     string
		msg     string
	}{
		{name: "nothing fragmented", policy: base, status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceNone},
		{name: "fragmented follower", policy: base, status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{80, 30}), want: MaintenanceDefragment, pod: "c-2"},
		{name: "fragmented leader and follower: the follower first", policy: base, status: status([2]int64{80, 30}, [2]int64{40, 30}, [2]int64{80, 30}), want: MaintenanceDefragment, pod: "c-2"},
		{name: "only the leader fragmented", policy: base, status: status([2]int64{80, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-0"},
		{name: "half free but under the minimum", policy: base, status: status([2]int64{8, 2}, [2]int64{8, 2}, [2]int64{8, 2}), want: MaintenanceNone},
		{name: "threshold off", policy: with(func(p *MaintenancePolicy) { p.FragmentedPercent = 0 }), status: status([2]int64{80, 10}, [2]int64{80, 10}, [2]int64{80, 10}), want: MaintenanceNone},
		{name: "defragmented minutes ago: not again for fragmentation", policy: with(func(p *MaintenancePolicy) { p.LastDefragmented[3] = now.Add(-time.Minute) }),
			status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{80, 30}), want: MaintenanceNone},
		{name: "scheduled round: followers first", policy: with(func(p *MaintenancePolicy) { p.RoundDue = now.Add(-time.Hour) }),
			status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-1", msg: "scheduled round"},
		{name: "scheduled round: the leader last", policy: with(func(p *MaintenancePolicy) {
			p.RoundDue = now.Add(-time.Hour)
			p.LastDefragmented[2], p.LastDefragmented[3] = now.Add(-time.Minute), now.Add(-time.Minute)
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-0"},
		{name: "scheduled round done", policy: with(func(p *MaintenancePolicy) {
			p.RoundDue = now.Add(-time.Hour)
			for id := uint64(1); id <= 3; id++ {
				p.LastDefragmented[id] = now.Add(-time.Minute)
			}
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceRoundDone},
		{name: "requested round: followers first, whatever the fragmentation", policy: with(func(p *MaintenancePolicy) { p.Requested = true }),
			status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-1", msg: "requested round"},
		{name: "requested round: members defragmented minutes ago too", policy: with(func(p *MaintenancePolicy) {
			p.Requested, p.RequestDone = true, map[string]bool{"c-1": true}
			p.LastDefragmented[3] = now.Add(-time.Minute)
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-2", msg: "requested round"},
		{name: "requested round: the leader last", policy: with(func(p *MaintenancePolicy) {
			p.Requested, p.RequestDone = true, map[string]bool{"c-1": true, "c-2": true}
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceDefragment, pod: "c-0"},
		{name: "requested round done", policy: with(func(p *MaintenancePolicy) {
			p.Requested, p.RequestDone = true, map[string]bool{"c-0": true, "c-1": true, "c-2": true}
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceRoundDone, msg: "the requested round"},
		{name: "requested and scheduled rounds done together", policy: with(func(p *MaintenancePolicy) {
			p.Requested, p.RequestDone = true, map[string]bool{"c-0": true, "c-1": true, "c-2": true}
			p.RoundDue = now.Add(-time.Hour)
			for id := uint64(1); id <= 3; id++ {
				p.LastDefragmented[id] = now.Add(-time.Minute)
			}
		}), status: status([2]int64{40, 30}, [2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceRoundDone, msg: "the round of 2026-11-24T02:00:00Z and the requested round"},
		{name: "requested round, a member does not answer: held", policy: with(func(p *MaintenancePolicy) { p.Requested = true }),
			status: status([2]int64{40, 30}, [2]int64{40, 30}), want: MaintenanceBlocked, msg: "c-2 is not a healthy voting member"},
		{name: "a member does not answer: no upkeep", policy: base, status: status([2]int64{80, 30}, [2]int64{80, 30}), want: MaintenanceBlocked, msg: "c-2 is not a healthy voting member"},
		{name: "a learner: no upkeep", policy: base, members: append(append([]Member(nil), members...), Member{ID: 4, Name: "c-3", IsLearner: true}),
			status: status([2]int64{80, 30}, [2]int64{80, 30}, [2]int64{80, 30}, [2]int64{80, 30}), want: MaintenanceBlocked},
		{name: "CORRUPT: nothing", policy: base, status: status([2]int64{80, 30}, [2]int64{80, 30}, [2]int64{80, 30}), alarms: []Alarm{{MemberID: 2, Type: "CORRUPT"}, noSpace[0]}, want: MaintenanceBlocked, msg: "CORRUPT"},
		{name: "NOSPACE: defragment followers with free pages after compaction", policy: base, status: status([2]int64{100, 20}, [2]int64{100, 20}, [2]int64{100, 20}), alarms: noSpace, want: MaintenanceDefragment, pod: "c-1", msg: "NOSPACE"},
		{name: "NOSPACE: the leader last", policy: base, status: status([2]int64{100, 20}, [2]int64{20, 20}, [2]int64{20, 20}), alarms: noSpace, want: MaintenanceDefragment, pod: "c-0"},
		{name: "NOSPACE: even under the fragmentation threshold", policy: with(func(p *MaintenancePolicy) { p.FragmentedPercent = 0; p.LastDefragmented[2] = now }),
			status: status([2]int64{20, 20}, [2]int64{100, 95}, [2]int64{20, 20}), alarms: noSpace, want: MaintenanceDefragment, pod: "c-1"},
		{name: "NOSPACE: room again, disarm", policy: base, status: status([2]int64{20, 20}, [2]int64{20, 20}, [2]int64{20, 20}), alarms: noSpace, want: MaintenanceDisarm},
		// Followers apply the compaction late: full members not defragmented in this recovery
		// are defragmented before the quota is called too small (the CI race).
		{name: "NOSPACE: full members not yet defragmented", policy: with(func(p *MaintenancePolicy) { p.LastDefragmented[2] = now.Add(-time.Second) }),
			status: status([2]int64{95, 95}, [2]int64{20, 20}, [2]int64{95, 95}), alarms: noSpace, want: MaintenanceDefragment, pod: "c-2", msg: "may not have applied the compaction yet"},
		{name: "NOSPACE: the data fills the quota", policy: with(func(p *MaintenancePolicy) {
			for id := uint64(1); id <= 3; id++ {
				p.LastDefragmented[id] = now.Add(-time.Minute)
			}
		}), status: status([2]int64{95, 95}, [2]int64{95, 95}, [2]int64{95, 95}), alarms: noSpace, want: MaintenanceQuotaTooSmall, msg: "raise spec.maintenance.quotaBackendBytes"},
		{name: "NOSPACE: quota already found too small: no defragmentation again", policy: with(func(p *MaintenancePolicy) { p.QuotaExceeded = true }),
			status: status([2]int64{95, 95}, [2]int64{95, 95}, [2]int64{95, 95}), alarms: noSpace, want: MaintenanceQuotaTooSmall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := tc.members
			if ms == nil {
				ms = members
			}
			act := NextMaintenance(tc.policy, Observed{Reachable: true, Linearizable: true, Members: ms, Status: tc.status}, tc.alarms)
			if act.Kind != tc.want || act.Pod != tc.pod || !strings.Contains(act.Message, tc.msg) {
				t.Fatalf("got %s %q (%s), want %s %q containing %q", act.Kind, act.Pod, act.Message, tc.want, tc.pod, tc.msg)
			}
			if act.Kind == MaintenanceDisarm && (len(act.Alarms) != 1 || act.Alarms[0] != noSpace[0]) {
				t.Fatalf("disarms %v", act.Alarms)
			}
		})
	}
}

func TestNearQuota(t *testing.T) {
	const mib = 1 << 20
	obs := func(sizes ...int64) Observed {
		o := Observed{Status: map[uint64]EndpointStatus{}}
		for i, s := range sizes {
			o.Status[uint64(i+1)] = EndpointStatus{MemberID: uint64(i + 1), DBSize: s * mib}
		}
		return o
	}
	for _, tc := range []struct {
		name  string
		quota int64
		obs   Observed
		want  bool
	}{
		{"every member well under the quota", 100 * mib, obs(40, 50, 79), false},
		{"one member at 80% of the quota", 100 * mib, obs(40, 80, 50), true},
		{"one member over the quota", 64 * mib, obs(70), true},
		{"no member answered", 100 * mib, obs(), false},
		{"no quota known", 0, obs(90), false},
	} {
		if got := NearQuota(tc.quota, tc.obs); got != tc.want {
			t.Errorf("%s: NearQuota = %v, want %v", tc.name, got, tc.want)
		}
	}
}
