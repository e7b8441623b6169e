package kubectletcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// defragReport is what `defrag` shows, and prints with -o json|yaml: the request and how far
// the operator got with it, and the operator's standing policy applied to the members.
type defragReport struct {
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// Requested is true once the annotation was written; RequestedAt is its value.
	Requested   bool   `json:"requested"`
	RequestedAt string `json:"requestedAt,omitempty"`
	// Handled: status.lastDefragmentRequest equals RequestedAt, every member was defragmented
	// in the requested round.
	Handled bool `json:"handled"`
	// Request is status.defragmentRequest when the command returned: the round under way
	// (Pending, with what it does or waits for) or Refused.
	Request *etcdv1beta2.DefragmentRequestStatus `json:"request,omitempty"`
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
	// DefragmentedInRound: the requested round defragmented the member (all of them once the
	// request is handled).
	DefragmentedInRound bool `json:"defragmentedInRound"`
	// Due and Why are the operator's standing rule (threshold, schedule) for the member.
	Due bool   `json:"due"`
	Why string `json:"why"`
}

// defrag asks the etcd operator for a defragmentation round of every member, `kubectl etcd
// defrag <cluster>`: it writes the annotation etcd.database.coreos.com/defragment-requested-at
// with the current time (a merge patch) and follows status until the operator records that
// value as handled, printing each member the round defragmented and what it waits for. Exit 0
// once handled (at once with --wait=false); 1 when the operator refused the value, the
// annotation was changed by someone else, or --timeout passed first (the request stays).
func (a *App) defrag(ctx context.Context, args []string) error {
	fs := a.flagSet("defrag")
	wait := fs.Bool("wait", true, "follow the round until every member was defragmented; --wait=false requests it and returns")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to follow the round (the request stays after it)")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "defrag <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("defrag", *output); err != nil {
		return err
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	progress := a.progress(*output)
	value := a.Now().UTC().Format(time.RFC3339Nano)
	if err := requestDefrag(ctx, c, r.cluster, value); err != nil {
		return err
	}
	fmt.Fprintf(progress, "defragmentation requested: %s=%s on etcdcluster %s/%s\n", etcdv1beta2.AnnotationDefragmentRequestedAt, value, r.cluster.Namespace, r.cluster.Name)
	var followErr error
	if *wait {
		followErr = a.followDefrag(ctx, c, r.cluster, value, *timeout, progress)
	}
	rep := planDefrag(r.cluster, a.Now())
	rep.Requested, rep.RequestedAt = true, value
	markRound(rep, r.cluster, value)
	if *output != "" {
		if err := writeObject(a.Out, *output, rep); err != nil {
			return err
		}
	} else {
		writeDefrag(a.Out, r.cluster, rep, a.Now())
	}
	return followErr
}

// requestDefrag writes the request annotation with a merge patch (only that key changes).
func requestDefrag(ctx context.Context, c client.Client, cl *etcdv1beta2.EtcdCluster, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{etcdv1beta2.AnnotationDefragmentRequestedAt: value}}})
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	if err := c.Patch(ctx, cl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating EtcdCluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return nil
}

// followDefrag polls the cluster (into cl) until the operator records value as handled or
// timeout passes, printing to w each member the round defragmented and each new message of the
// round. (The deadline is a timer, not the reads' context: the client's rate limiter refuses a
// read that would end after a context's deadline, with an error of its own.)
func (a *App) followDefrag(ctx context.Context, c client.Reader, cl *etcdv1beta2.EtcdCluster, value string, timeout time.Duration, w io.Writer) error {
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	printed, lastMsg, accepted := 0, "", false
	for {
		if err := c.Get(ctx, key, cl); err != nil {
			return fmt.Errorf("following EtcdCluster %s: %w", key, err)
		}
		st := &cl.Status
		if st.LastDefragmentRequest == value {
			fmt.Fprintf(w, "done: every member was defragmented in the requested round (status.lastDefragmentRequest)\n")
			return nil
		}
		if v := cl.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt]; v != value {
			fmt.Fprintf(w, "the annotation was changed to %q by someone else: this request was replaced or withdrawn\n", v)
			return errOutcome
		}
		if rq := st.DefragmentRequest; rq != nil && rq.RequestedAt == value {
			if rq.State == etcdv1beta2.DefragmentRequestRefused {
				fmt.Fprintf(w, "REFUSED: %s\n", oneLine(rq.Message))
				return errOutcome
			}
			if !accepted {
				fmt.Fprintf(w, "accepted by the etcd operator at %s\n", stamp(rq.StartedAt))
				accepted = true
			}
			for ; printed < len(rq.Defragmented); printed++ {
				fmt.Fprintf(w, "defragmented %s (%d of %d members)\n", rq.Defragmented[printed], printed+1, len(st.Members.Details))
			}
			if rq.Message != lastMsg && strings.Contains(rq.Message, "waits") {
				fmt.Fprintf(w, "%s\n", oneLine(rq.Message))
			}
			lastMsg = rq.Message
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("following EtcdCluster %s: %w", key, ctx.Err())
		case <-deadline.C:
			why := "the etcd operator has not accepted it (is it running, and of a release that knows the annotation?)"
			if accepted {
				why = "the round is not finished"
			}
			return fmt.Errorf("waiting for the requested defragmentation of %s: %s after %s; the request stays (kubectl get etcd %s -n %s -o jsonpath='{.status.defragmentRequest}')",
				key, why, timeout, cl.Name, cl.Namespace)
		case <-tick.C:
		}
	}
}

// markRound fills in the request's state from the cluster's status: handled, the round under
// way, and which members it defragmented.
func markRound(rep *defragReport, c *etcdv1beta2.EtcdCluster, value string) {
	rep.Handled = c.Status.LastDefragmentRequest == value
	done := map[string]bool{}
	if rq := c.Status.DefragmentRequest; rq != nil && rq.RequestedAt == value {
		rep.Request = rq.DeepCopy()
		for _, name := range rq.Defragmented {
			done[name] = true
		}
	}
	for i := range rep.Members {
		rep.Members[i].DefragmentedInRound = rep.Handled || done[rep.Members[i].Name]
	}
}

// planDefrag reads the operator's defragmentation policy (spec.maintenance.defragmentation with
// its defaults) and the members' last reported sizes, and says for each member whether the
// operator's rule (pkg/cluster NextMaintenance) makes it due: a scheduled round it was not
// defragmented in, or the threshold met at most once per cluster.MinDefragInterval.
func planDefrag(c *etcdv1beta2.EtcdCluster, now time.Time) *defragReport {
	rep := &defragReport{
		Namespace: c.Namespace, Cluster: c.Name,
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

// writeDefrag prints rep as text: the request's state, the standing policy, the members.
func writeDefrag(w io.Writer, c *etcdv1beta2.EtcdCluster, rep *defragReport, now time.Time) {
	switch rq := rep.Request; {
	case rep.Handled:
		fmt.Fprintf(w, "\nRequest %s: handled, every member was defragmented in its round.\n", rep.RequestedAt)
	case rq != nil && rq.State == etcdv1beta2.DefragmentRequestRefused:
		fmt.Fprintf(w, "\nRequest %s: refused: %s\n", rep.RequestedAt, oneLine(rq.Message))
	case rq != nil:
		fmt.Fprintf(w, "\nRequest %s: pending since %s, %d member(s) defragmented so far: %s\n", rep.RequestedAt, stamp(rq.StartedAt), len(rq.Defragmented), oneLine(rq.Message))
	default:
		fmt.Fprintf(w, "\nRequest %s: not accepted by the etcd operator yet.\n", rep.RequestedAt)
	}
	fmt.Fprintf(w, "\nStanding policy of %s/%s (spec.maintenance.defragmentation):\n", c.Namespace, c.Name)
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
	fmt.Fprintln(w, "\nMembers (sizes as of the operator's last pass; DUE: the standing policy):")
	tw = table(w)
	fmt.Fprintln(tw, "  NAME\tROLE\tDB SIZE\tIN USE\tFREE\tLAST DEFRAGMENTED\tIN ROUND\tDUE")
	for _, m := range rep.Members {
		due := "no: " + m.Why
		if m.Due {
			due = "yes: " + m.Why
		}
		inRound := "no"
		if m.DefragmentedInRound {
			inRound = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d%%\t%s\t%s\t%s\n", m.Name, orDash(m.Role), byteSize(m.DBSize), byteSize(m.DBSizeInUse), m.FreePercent, ago0(now, m.LastDefragmentationTime), inRound, due)
	}
	if len(rep.Members) == 0 {
		fmt.Fprintln(tw, "  (none reported)")
	}
	_ = tw.Flush()
}

// ago0 is "<age> ago" for t, or "never".
func ago0(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return age(now, t) + " ago"
}
