package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// status prints one screen about a cluster: `kubectl etcd status <cluster>`.
func (a *App) status(ctx context.Context, args []string) error {
	fs := a.flagSet("status")
	pos, err := a.parse(fs, args, 1, "status <cluster>")
	if err != nil {
		return err
	}
	_, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	writeStatus(a.Out, r, a.Now())
	return nil
}

// writeStatus renders r: the cluster (with a requested defragmentation not over yet), its
// conditions and members, its newest backup, the last restore drill and the last automatic
// recovery.
func writeStatus(w io.Writer, r *related, now time.Time) {
	c, st := r.cluster, &r.cluster.Status
	tw := table(w)
	fmt.Fprintf(tw, "Cluster:\t%s/%s\n", c.Namespace, c.Name)
	phase := orDash(string(st.Phase))
	if st.Reason != "" {
		phase += " (" + st.Reason + ")"
	}
	fmt.Fprintf(tw, "Phase:\t%s\n", phase)
	version := orDash(st.CurrentVersion)
	if st.TargetVersion != "" {
		version += " -> " + st.TargetVersion + " (upgrading)"
	}
	fmt.Fprintf(tw, "Version:\t%s (spec %s)\n", version, orDash(c.Spec.Version))
	members := fmt.Sprintf("%d ready of %d (spec size %d)", st.ReadyMembers, st.Size, c.Spec.Size)
	if out := st.Members.Outdated; len(out) > 0 {
		members += fmt.Sprintf("; %d on an older pod spec, being rolled: %s", len(out), strings.Join(out, ", "))
	}
	fmt.Fprintf(tw, "Members:\t%s\n", members)
	fmt.Fprintf(tw, "Leader:\t%s\n", orDash(st.Leader))
	fmt.Fprintf(tw, "Cluster ID:\t%s\n", orDash(st.ClusterID))
	if st.ServiceName != "" {
		fmt.Fprintf(tw, "Client service:\t%s:%d\n", st.ServiceName, st.ClientPort)
	}
	if d := st.DefragmentRequest; d != nil {
		// A round asked for with `kubectl etcd defrag` (or the annotation) that is not over.
		line := fmt.Sprintf("%s, %d of %d members done (requested %s)", d.State, len(d.Defragmented), st.Size, d.RequestedAt)
		if d.Message != "" {
			line += ": " + oneLine(d.Message)
		}
		fmt.Fprintf(tw, "Defrag:\t%s\n", line)
	}
	_ = tw.Flush()

	fmt.Fprintln(w, "\nConditions:")
	writeConditions(w, st.Conditions, now)

	fmt.Fprintln(w, "\nMembers:")
	tw = table(w)
	fmt.Fprintln(tw, "  NAME\tROLE\tVERSION\tDB SIZE\tIN USE\tHEALTHY\tLAST ERROR")
	for _, m := range st.Members.Details {
		role := orDash(string(m.Role))
		if m.Name == st.Leader && m.Role != etcdv1beta2.MemberRoleLeader {
			role += " (leader)"
		}
		if slices.Contains(st.Members.Outdated, m.Name) {
			role += " (outdated)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%t\t%s\n", m.Name, role, orDash(m.Version), byteSize(m.DBSize), byteSize(m.DBSizeInUse), m.Healthy, orDash(m.LastError))
	}
	if len(st.Members.Details) == 0 {
		fmt.Fprintln(tw, "  (none reported)")
	}
	_ = tw.Flush()

	writeBackupSummary(w, r, now)
	writeDrills(w, r.schedules, now)
	writeRecovery(w, st.LastRecovery, now)
}

func writeConditions(w io.Writer, conds []metav1.Condition, now time.Time) {
	tw := table(w)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range conds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(now, &c.LastTransitionTime), oneLine(c.Message))
	}
	if len(conds) == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	_ = tw.Flush()
}

// oneLine keeps a message on its table row.
func oneLine(s string) string { return orDash(strings.Join(strings.Fields(s), " ")) }

// writeDrills prints each schedule's last restore drill (status.lastDrill, DrillPassed).
func writeDrills(w io.Writer, schedules []etcdv1beta2.EtcdBackupSchedule, now time.Time) {
	fmt.Fprintln(w, "\nRestore drills:")
	tw := table(w)
	any := false
	for _, s := range schedules {
		d := s.Status.LastDrill
		cond := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionDrillPassed)
		if s.Spec.RestoreDrill == nil && d == nil && cond == nil {
			continue
		}
		any = true
		if d == nil {
			msg := "no drill finished yet"
			if cond != nil {
				msg = fmt.Sprintf("DrillPassed=%s %s: %s", cond.Status, cond.Reason, oneLine(cond.Message))
			}
			fmt.Fprintf(tw, "  %s:\t%s; next %s\n", s.Name, msg, stamp(s.Status.NextDrillTime))
			continue
		}
		outcome := "PASSED"
		if !d.Passed {
			outcome = "FAILED: " + oneLine(d.Reason)
		}
		fmt.Fprintf(tw, "  %s:\t%s %s ago (restore %s, backup %s", s.Name, outcome, age(now, d.CompletionTime), d.Restore, orDash(d.Backup))
		if d.TimeToRestore != nil {
			fmt.Fprintf(tw, ", time to restore %s", d.TimeToRestore.Duration)
		}
		if d.BackupAge != nil {
			fmt.Fprintf(tw, ", backup age %s", d.BackupAge.Duration)
		}
		if d.PointInTime != nil && d.RecoveryPointAge != nil {
			fmt.Fprintf(tw, ", recovery point %s with the capture", d.RecoveryPointAge.Duration)
		}
		if d.Keys > 0 {
			fmt.Fprintf(tw, ", %d keys verified", d.Keys)
		}
		fmt.Fprintf(tw, "); next %s\n", stamp(s.Status.NextDrillTime))
	}
	if !any {
		fmt.Fprintln(tw, "  (no schedule of this cluster runs restore drills)")
	}
	_ = tw.Flush()
}

// writeRecovery prints status.lastRecovery.
func writeRecovery(w io.Writer, rec *etcdv1beta2.RecoveryRecord, now time.Time) {
	fmt.Fprintln(w, "\nLast automatic recovery:")
	if rec == nil {
		fmt.Fprintln(w, "  (none)")
		return
	}
	fmt.Fprintf(w, "  restore %s: quorum lost %s (%s ago), backup of %s restored; lost at most %ds and at least %d revisions\n",
		rec.RestoreName, stamp(rec.QuorumLostAt), age(now, rec.QuorumLostAt), stamp(rec.BackupTime), rec.RPOSeconds, rec.RPORevisions)
}
