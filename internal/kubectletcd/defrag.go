package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// noDefragTrigger says why `defrag` requests nothing: the etcd operator owns defragmentation
// and its API has no on-demand request, and the plugin does not call etcd for an action the
// operator owns.
const noDefragTrigger = "Nothing was requested: the etcd operator owns defragmentation and its API has no on-demand trigger; " +
	"spec.maintenance.defragmentation (a fragmentation threshold and a cron schedule) decides when members are defragmented. " +
	"The plugin does not call etcd itself for an action the operator owns."

// defragReport is what `defrag` shows, and prints with -o json|yaml.
type defragReport struct {
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// Requested is always false: there is no on-demand trigger (Reason says so).
	Requested bool   `json:"requested"`
	Reason    string `json:"reason"`
	// FragmentedPercent and MinFreeBytes are the threshold (spec, or its defaults).
	FragmentedPercent int   `json:"fragmentedPercent"`
	MinFreeBytes      int64 `json:"minFreeBytes"`
	// Schedule is the cron schedule of rounds ("" for none); NextRound when the next one is due.
	Schedule  string       `json:"schedule,omitempty"`
	LastRound *metav1.Time `json:"lastRound,omitempty"`
	NextRound *metav1.Time `json:"nextRound,omitempty"`
	// Blocked says why the operator does no upkeep now ("" when it may).
	Blocked string         `json:"blocked,omitempty"`
	Members []defragMember `json:"members"`
}

// defragMember is one member's fragmentation and whether the operator defragments it.
type defragMember struct {
	Name                    string       `json:"name"`
	Role                    string       `json:"role"`
	DBSize                  int64        `json:"dbSize"`
	DBSizeInUse             int64        `json:"dbSizeInUse"`
	FreePercent             int64        `json:"freePercent"`
	LastDefragmentationTime *metav1.Time `json:"lastDefragmentationTime,omitempty"`
	Due                     bool         `json:"due"`
	Why                     string       `json:"why"`
}

// defrag shows when the etcd operator defragments a cluster's members and why, and requests
// nothing: `kubectl etcd defrag <cluster>`. It exits 1 since no defragmentation was requested.
func (a *App) defrag(ctx context.Context, args []string) error {
	fs := a.flagSet("defrag")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "defrag <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("defrag", *output); err != nil {
		return err
	}
	_, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	rep := planDefrag(r.cluster, a.Now())
	if *output != "" {
		fmt.Fprintln(a.Err, noDefragTrigger)
		if err := writeObject(a.Out, *output, rep); err != nil {
			return err
		}
		return errOutcome
	}
	writeDefrag(a.Out, r.cluster, rep, a.Now())
	return errOutcome
}

// planDefrag reads the operator's defragmentation policy (spec.maintenance.defragmentation with
// its defaults) and the members' last reported sizes, and says for each member whether the
// operator's rule (pkg/cluster NextMaintenance) makes it due: a scheduled round it was not
// defragmented in, or the threshold met at most once per cluster.MinDefragInterval.
func planDefrag(c *etcdv1beta2.EtcdCluster, now time.Time) *defragReport {
	rep := &defragReport{
		Namespace: c.Namespace, Cluster: c.Name, Reason: noDefragTrigger,
		FragmentedPercent: etcdv1beta2.DefaultFragmentedPercent, MinFreeBytes: etcdv1beta2.DefaultMinFreeBytes.Value(),
		LastRound: c.Status.LastDefragmentationRound, Members: []defragMember{},
	}
	var roundDue time.Time
	if m := c.Spec.Maintenance; m != nil && m.Defragmentation != nil {
		d := m.Defragmentation
		if d.FragmentedPercent != nil {
			rep.FragmentedPercent = int(*d.FragmentedPercent)
		}
		if d.MinFreeBytes != nil {
			rep.MinFreeBytes = d.MinFreeBytes.Value()
		}
		rep.Schedule = d.Schedule
		if sched, err := cron.ParseStandard(d.Schedule); d.Schedule != "" && err == nil {
			since := c.CreationTimestamp.Time
			if t := c.Status.LastDefragmentationRound; t != nil {
				since = t.Time
			}
			next := sched.Next(since.UTC())
			rep.NextRound = &metav1.Time{Time: next}
			if !now.Before(next) {
				roundDue = next
			}
		}
	}
	for _, m := range c.Status.Members.Details {
		if !m.Healthy || m.Role == etcdv1beta2.MemberRoleLearner || m.Role == etcdv1beta2.MemberRoleUnknown {
			rep.Blocked = "member " + m.Name + " is not a healthy voting member: the operator does no upkeep while the cluster is degraded"
		}
		rep.Members = append(rep.Members, defragMemberOf(m, rep, roundDue, now))
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionDegraded); rep.Blocked == "" && cond != nil && cond.Status == metav1.ConditionTrue {
		rep.Blocked = "Degraded=True (" + cond.Reason + "): " + oneLine(cond.Message)
	}
	return rep
}

// defragMemberOf applies the operator's rule to one member.
func defragMemberOf(m etcdv1beta2.MemberStatus, rep *defragReport, roundDue, now time.Time) defragMember {
	free := m.DBSize - m.DBSizeInUse
	dm := defragMember{Name: m.Name, Role: string(m.Role), DBSize: m.DBSize, DBSizeInUse: m.DBSizeInUse, LastDefragmentationTime: m.LastDefragmentationTime}
	if m.DBSize > 0 {
		dm.FreePercent = free * 100 / m.DBSize
	}
	var last time.Time
	if m.LastDefragmentationTime != nil {
		last = m.LastDefragmentationTime.Time
	}
	switch {
	case !roundDue.IsZero() && last.Before(roundDue):
		dm.Due, dm.Why = true, "the scheduled round of "+roundDue.UTC().Format(time.RFC3339)
	case rep.FragmentedPercent == 0:
		dm.Why = "threshold off (fragmentedPercent 0)"
	case free < rep.MinFreeBytes:
		dm.Why = fmt.Sprintf("%s free < minFreeBytes %s", byteSize(free), byteSize(rep.MinFreeBytes))
	case free*100 < int64(rep.FragmentedPercent)*m.DBSize:
		dm.Why = fmt.Sprintf("%d%% free < %d%%", dm.FreePercent, rep.FragmentedPercent)
	case now.Sub(last) < cluster.MinDefragInterval:
		dm.Why = fmt.Sprintf("threshold met; not before %s (once per %s)", last.Add(cluster.MinDefragInterval).UTC().Format(time.RFC3339), duration.HumanDuration(cluster.MinDefragInterval))
	default:
		dm.Due, dm.Why = true, fmt.Sprintf("%d%% free >= %d%%", dm.FreePercent, rep.FragmentedPercent)
	}
	return dm
}

// writeDefrag prints rep as text.
func writeDefrag(w io.Writer, c *etcdv1beta2.EtcdCluster, rep *defragReport, now time.Time) {
	fmt.Fprintf(w, "%s\n\nDefragmentation of %s/%s (spec.maintenance.defragmentation):\n", rep.Reason, c.Namespace, c.Name)
	tw := table(w)
	if rep.FragmentedPercent == 0 {
		fmt.Fprintf(tw, "  Threshold:\toff (fragmentedPercent 0)\n")
	} else {
		fmt.Fprintf(tw, "  Threshold:\t%d%% of the file free and at least %s, at most once per member every %s\n", rep.FragmentedPercent, byteSize(rep.MinFreeBytes), duration.HumanDuration(cluster.MinDefragInterval))
	}
	if rep.Schedule == "" {
		fmt.Fprintf(tw, "  Rounds:\tno schedule; last round %s\n", stamp(rep.LastRound))
	} else {
		fmt.Fprintf(tw, "  Rounds:\t%q (UTC); last round %s, next %s\n", rep.Schedule, stamp(rep.LastRound), stamp(rep.NextRound))
	}
	if rep.Blocked != "" {
		fmt.Fprintf(tw, "  Blocked:\t%s\n", rep.Blocked)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionProgressing); cond != nil && cond.Status == metav1.ConditionTrue {
		fmt.Fprintf(tw, "  Progressing:\t%s: %s\n", cond.Reason, oneLine(cond.Message))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nMembers (sizes as of the operator's last pass):")
	tw = table(w)
	fmt.Fprintln(tw, "  NAME\tROLE\tDB SIZE\tIN USE\tFREE\tLAST DEFRAGMENTED\tDUE")
	for _, m := range rep.Members {
		due := "no: " + m.Why
		if m.Due {
			due = "yes: " + m.Why
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d%%\t%s\t%s\n", m.Name, orDash(m.Role), byteSize(m.DBSize), byteSize(m.DBSizeInUse), m.FreePercent, ago0(now, m.LastDefragmentationTime), due)
	}
	if len(rep.Members) == 0 {
		fmt.Fprintln(tw, "  (none reported)")
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nThe operator defragments a member that is due on one of its next passes, one member per pass, followers first\n"+
		"(a Defragmented event each). To have members defragmented sooner, change the policy: a lower fragmentedPercent or\n"+
		"minFreeBytes, or a schedule (docs/etcdcluster.md, Storage upkeep).")
}

// ago0 is "<age> ago" for t, or "never".
func ago0(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return age(now, t) + " ago"
}
