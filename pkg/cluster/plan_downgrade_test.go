package cluster

import (
	"slices"
	"strings"
	"testing"
)

// downgrading is a 3-member cluster (c-0 leads) on 3.6.16; on tells which members already
// run 3.5.35; enabled and migrated say whether the members still on 3.6 report the downgrade
// enabled and their storage at 3.5.
func downgrading(pvc bool, enabled, migrated bool, on ...string) Observed {
	w := newWorld()
	for i := range 3 {
		if pvc {
			w.member(i, "pvc")
		} else {
			w.member(i)
		}
	}
	setLeader(w, 1)
	o := w.o
	for _, m := range o.Members {
		s, p := o.Status[m.ID], o.Pods[m.PodName()]
		p.Flags = []string{"--name=" + m.Name, "--auto-compaction-mode=periodic"}
		switch {
		case slices.Contains(on, m.Name):
			s.Version, p.Version = "3.5.35", "3.5.35" // 3.5 reports neither storage nor downgrade
		default:
			s.StorageVersion = "3.6.0"
			if enabled {
				s.DowngradeTarget = "3.5.0"
			}
			if migrated {
				s.StorageVersion = "3.5.0"
			}
		}
		o.Status[m.ID], o.Pods[m.PodName()] = s, p
	}
	return o
}

func withFlags(o Observed, pod string, flags ...string) Observed {
	p := o.Pods[pod]
	p.Flags = append(slices.Clone(p.Flags), flags...)
	o.Pods[pod] = p
	return o
}

func TestNextDowngrade(t *testing.T) {
	to35 := Desired{Name: "c", Size: 3, Version: "3.5.35"}
	to35pvc := Desired{Name: "c", Size: 3, Version: "3.5.35", PVC: true}
	back := Desired{Name: "c", Size: 3, Version: "3.6.16"}
	one := func() Observed {
		o := newWorld().member(0, "leader").o
		s := o.Status[1]
		s.StorageVersion, s.DowngradeTarget = "3.5.0", "3.5.0"
		o.Status[1] = s
		return withFlags(o, "c-0", "--corrupt-check-time=10s")
	}
	serializable := downgrading(false, false, false)
	serializable.Linearizable = false
	for _, tc := range []struct {
		name    string
		d       Desired
		o       Observed
		want    ActionKind
		pod     string
		version string
		says    string
	}{
		{"not enabled: enable etcd's downgrade first", to35, downgrading(false, false, false), ActionEnableDowngrade, "c-0", "3.5", "enabling etcd's downgrade to 3.5"},
		{"enabled, storage not migrated: wait", to35, downgrading(false, true, false), ActionWait, "c-0", "", "migrate its storage"},
		{"migrated: a follower first, in place", to35, downgrading(false, true, true), ActionUpgradeMember, "c-1", "3.5.35", "in place"},
		{"one follower done: the other", to35, downgrading(false, true, true, "c-1"), ActionUpgradeMember, "c-2", "3.5.35", "downgrading member c-2"},
		{"followers done: the leader last", to35, downgrading(false, true, true, "c-1", "c-2"), ActionUpgradeMember, "c-0", "3.5.35", "downgrading member c-0"},
		{"3.6-only flag, emptyDir: refused before anything starts (no member may join during a downgrade)", to35, withFlags(downgrading(false, false, false), "c-1", "--corrupt-check-time=10s"), ActionRollBlocked, "c-1", "", "etcd lets no member join during a downgrade"},
		{"3.6-only flag, volume: evicted, the version it comes back on recorded", to35pvc, withFlags(downgrading(true, true, true), "c-1", "--peer-skip-client-san-verification=true"), ActionRollMember, "c-1", "3.5.35", "--peer-skip-client-san-verification"},
		{"3.6-only flag, two members on volumes: refused before anything starts", Desired{Name: "c", Size: 2, Version: "3.5.35", PVC: true}, func() Observed {
			o := withFlags(downgrading(true, false, false), "c-2", "--feature-gates=CompactHashCheck=true")
			o.Members = o.Members[:2]
			delete(o.Pods, "c-2")
			o = withFlags(o, "c-1", "--feature-gates=CompactHashCheck=true")
			return o
		}(), ActionRollBlocked, "c-1", "", "Scale it to 3 first"},
		{"3.6-only flag on the leader: leadership moves first", to35pvc, withFlags(downgrading(true, true, true, "c-1", "c-2"), "c-0", "--feature-gates=CompactHashCheck=true"), ActionMoveLeader, "c-0", "", "moving leadership"},
		{"3.6-only flag, one member: refused with the way out", Desired{Name: "c", Size: 1, Version: "3.5.35"}, one(), ActionRollBlocked, "c-0", "", "Set spec.version back to 3.6.16"},
		{"one member, flags 3.5 knows: in place", Desired{Name: "c", Size: 1, Version: "3.5.35"}, func() Observed {
			o := one()
			p := o.Pods["c-0"]
			p.Flags = nil
			o.Pods["c-0"] = p
			return o
		}(), ActionUpgradeMember, "c-0", "3.5.35", "in place"},
		{"every member on 3.5: done (etcd ends the downgrade)", to35, downgrading(false, true, true, "c-0", "c-1", "c-2"), ActionNone, "", "", ""},
		{"spec back to 3.6 while enabled: cancelled through a 3.6 member", back, downgrading(false, true, true, "c-1"), ActionCancelDowngrade, "c-0", "", "cancelling etcd's downgrade to 3.5.0"},
		{"cancelled for a join after c-1 moved: no enable (etcd refuses it), the next member moves", to35, downgrading(false, false, true, "c-1"), ActionUpgradeMember, "c-2", "3.5.35", "in place"},
		{"spec back to 3.6, cancelled: c-1 upgraded again", back, downgrading(false, false, true, "c-1"), ActionUpgradeMember, "c-1", "3.6.16", "upgrading member c-1"},
		{"member list not linearizable: not enabled", to35, serializable, ActionMembershipUnverified, "c-0", "", "enabling etcd's downgrade"},
		// Members made during a downgrade (versioned).
		{"enabled, a member missing: the downgrade cancelled before one joins", to35, func() Observed {
			o := downgrading(false, true, true, "c-1")
			o.Members = o.Members[:2]
			delete(o.Pods, "c-2")
			return o
		}(), ActionCancelDowngrade, "c-0", "", "etcd lets no member join while a downgrade is enabled"},
		{"cancelled, a member missing: it joins on the newest release a pod runs", to35, func() Observed {
			o := downgrading(false, false, true, "c-1")
			o.Members = o.Members[:2]
			delete(o.Pods, "c-2")
			return o
		}(), ActionAddMember, "c-2", "3.6.16", "adding member c-2"},
		{"a volume member's pod gone during the downgrade: back on the newest release", to35pvc, func() Observed {
			o := downgrading(true, true, true, "c-1")
			delete(o.Pods, "c-2")
			return o
		}(), ActionRecreatePod, "c-2", "3.6.16", "recreating the pod of member c-2"},
		{"the pod the downgrade evicted: back on the version its volume records", to35pvc, func() Observed {
			o := downgrading(true, true, true, "c-1")
			delete(o.Pods, "c-2")
			o.RecreateVersions = map[string]string{"c-2": "3.5.35", "c-0": "3.5.34"}
			return o
		}(), ActionRecreatePod, "c-2", "3.5.35", "recreating the pod of member c-2"},
		{"a version recorded by an earlier downgrade is not this one's", to35pvc, func() Observed {
			o := downgrading(true, true, true, "c-1")
			delete(o.Pods, "c-2")
			o.RecreateVersions = map[string]string{"c-2": "3.5.34"}
			return o
		}(), ActionRecreatePod, "c-2", "3.6.16", "recreating the pod of member c-2"},
		{"no downgrade: a new member runs spec.version", Desired{Name: "c", Size: 3, Version: "3.6.16"}, newWorld().member(0, "leader").member(1).o, ActionAddMember, "c-2", "3.6.16", "adding member c-2"},
		{"a new cluster's seed runs spec.version", Desired{Name: "c", Size: 3, Version: "3.5.35"}, Observed{Pods: map[string]PodState{}}, ActionCreateSeed, "c-0", "3.5.35", "creating seed member c-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.d, tc.o)
			if got.Kind != tc.want || got.Pod != tc.pod || got.Version != tc.version || !strings.Contains(got.Message, tc.says) {
				t.Fatalf("Next = %s %q version %q (%s), want %s %q version %q saying %q", got.Kind, got.Pod, got.Version, got.Message, tc.want, tc.pod, tc.version, tc.says)
			}
		})
	}
}

func TestFlagsUnknownTo(t *testing.T) {
	flags := []string{"--name=c-0", "--corrupt-check-time=10s", "--experimental-corrupt-check-time=10s", "--feature-gates=CompactHashCheck=true", "--log-format", "--peer-skip-client-san-verification=true"}
	if got, want := FlagsUnknownTo("3.5.35", flags), []string{"--corrupt-check-time", "--feature-gates", "--log-format", "--peer-skip-client-san-verification"}; !slices.Equal(got, want) {
		t.Errorf("FlagsUnknownTo(3.5.35) = %v, want %v", got, want)
	}
	if got := FlagsUnknownTo("3.6.16", flags); got != nil {
		t.Errorf("FlagsUnknownTo(3.6.16) = %v, want none", got)
	}
}

func TestIsDowngrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{{"3.6.16", "3.5.35", true}, {"3.6.16", "3.6.15", false}, {"3.5.35", "3.6.16", false}, {"", "3.5.35", false}, {"3.6.x", "3.5.35", false}} {
		if got := IsDowngrade(tc.from, tc.to); got != tc.want {
			t.Errorf("IsDowngrade(%q, %q) = %t, want %t", tc.from, tc.to, got, tc.want)
		}
	}
}
