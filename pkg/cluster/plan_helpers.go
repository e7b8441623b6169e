package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// staleInitialCluster reports whether the pod's --initial-cluster names another set of members
// than the member list.
func staleInitialCluster(p PodState, members []Member) bool {
	if p.InitialCluster == nil {
		return false
	}
	want := make([]string, 0, len(members))
	for _, m := range members {
		want = append(want, m.PodName())
	}
	got := append([]string(nil), p.InitialCluster...)
	sort.Strings(want)
	sort.Strings(got)
	return strings.Join(want, ",") != strings.Join(got, ",")
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
		return MemberIndex(ms[i].PodName()) > MemberIndex(ms[j].PodName())
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
// or a volume (the cluster's own or reserved by a foreign one), so a name is not reused while
// anything of its previous owner remains.
func NextMemberName(cluster string, o Observed) string {
	max := -1
	see := func(name string) {
		if strings.HasPrefix(name, cluster+"-") {
			if i := MemberIndex(name); i > max {
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
	for name := range o.ReservedNames {
		see(name)
	}
	return fmt.Sprintf("%s-%d", cluster, max+1)
}

// MemberIndex is n of a member named <cluster>-<n>, -1 for a name without a numeric suffix.
func MemberIndex(name string) int {
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

// Restored are the members restored from the backup at once: RestoredMembers, or the seed
// alone.
func (d Desired) Restored() []string {
	if len(d.RestoredMembers) > 0 {
		return d.RestoredMembers
	}
	return []string{d.SeedMember}
}

// missingRestored are the restored members without a pod of this cluster's and without a
// foreign object at their name (a foreign pod there is reported by the restore phase, never
// replaced).
func (d Desired) missingRestored(o Observed) []string {
	var out []string
	for _, n := range d.Restored() {
		if _, ok := o.Pods[n]; !ok && !o.ReservedNames[n] {
			out = append(out, n)
		}
	}
	return out
}
