package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// status prints one screen about a cluster, or with -o json|yaml the same as an object:
// `kubectl etcd status <cluster>`.
func (a *App) status(ctx context.Context, args []string) error {
	fs := a.flagSet("status")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "status <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("status", *output); err != nil {
		return err
	}
	_, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	rep := statusOf(r, a.Now())
	if *output != "" {
		return writeObject(a.Out, *output, rep)
	}
	writeStatus(a.Out, rep, a.Now())
	return nil
}

// writeStatus renders rep: the cluster (with a requested defragmentation not over yet), its
// conditions and members, its newest backup, the last restore drill and the last automatic
// recovery.
func writeStatus(w io.Writer, rep *statusReport, now time.Time) {
	tw := table(w)
	fmt.Fprintf(tw, "Cluster:\t%s/%s\n", rep.Namespace, rep.Cluster)
	phase := orDash(rep.Phase)
	if rep.Reason != "" {
		phase += " (" + rep.Reason + ")"
	}
	fmt.Fprintf(tw, "Phase:\t%s\n", phase)
	version := orDash(rep.Version)
	if rep.TargetVersion != "" {
		version += " -> " + rep.TargetVersion + " (upgrading)"
	}
	fmt.Fprintf(tw, "Version:\t%s (spec %s)\n", version, orDash(rep.SpecVersion))
	members := fmt.Sprintf("%d ready of %d (spec size %d)", rep.ReadyMembers, rep.Size, rep.SpecSize)
	if out := rep.Outdated; len(out) > 0 {
		members += fmt.Sprintf("; %d on an older pod spec, being rolled: %s", len(out), strings.Join(out, ", "))
	}
	fmt.Fprintf(tw, "Members:\t%s\n", members)
	fmt.Fprintf(tw, "Leader:\t%s\n", orDash(rep.Leader))
	fmt.Fprintf(tw, "Cluster ID:\t%s\n", orDash(rep.ClusterID))
	if rep.ServiceName != "" {
		fmt.Fprintf(tw, "Client service:\t%s:%d\n", rep.ServiceName, rep.ClientPort)
	}
	if t := rep.TLS; t != nil && t.CARotation != "" {
		fmt.Fprintf(tw, "CA rotation:\t%s (%d CAs trusted; kubectl etcd rotate-ca shows the steps)\n", t.CARotation, len(t.TrustedCAs))
	}
	if d := rep.DefragmentRequest; d != nil {
		// A round asked for with `kubectl etcd defrag` (or the annotation) that is not over.
		line := fmt.Sprintf("%s, %d of %d members done (requested %s)", d.State, len(d.Defragmented), rep.Size, d.RequestedAt)
		if d.Message != "" {
			line += ": " + oneLine(d.Message)
		}
		fmt.Fprintf(tw, "Defrag:\t%s\n", line)
	}
	_ = tw.Flush()

	fmt.Fprintln(w, "\nConditions:")
	writeConditions(w, rep.Conditions, now)

	fmt.Fprintln(w, "\nMembers:")
	tw = table(w)
	fmt.Fprintln(tw, "  NAME\tROLE\tVERSION\tDB SIZE\tIN USE\tHEALTHY\tLAST ERROR")
	for _, m := range rep.Members {
		role := orDash(m.Role)
		if m.Leader && m.Role != string(etcdv1beta2.MemberRoleLeader) {
			role += " (leader)"
		}
		if m.Outdated {
			role += " (outdated)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%t\t%s\n", m.Name, role, orDash(m.Version), byteSize(m.DBSize), byteSize(m.DBSizeInUse), m.Healthy, orDash(m.LastError))
	}
	if len(rep.Members) == 0 {
		fmt.Fprintln(tw, "  (none reported)")
	}
	_ = tw.Flush()

	writeBackupSummary(w, &rep.Backups, now)
	writeDrills(w, rep.Drills, now)
	writeRecovery(w, rep.LastRecovery, now)
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

// writeDrills prints each drilling schedule's last restore drill (status.lastDrill,
// DrillPassed).
func writeDrills(w io.Writer, drills []statusDrill, now time.Time) {
	fmt.Fprintln(w, "\nRestore drills:")
	tw := table(w)
	for _, s := range drills {
		d, cond := s.LastDrill, s.DrillPassed
		if d == nil {
			msg := "no drill finished yet"
			if cond != nil {
				msg = fmt.Sprintf("DrillPassed=%s %s: %s", cond.Status, cond.Reason, oneLine(cond.Message))
			}
			fmt.Fprintf(tw, "  %s:\t%s; next %s\n", s.Schedule, msg, stamp(s.NextDrillTime))
			continue
		}
		outcome := "PASSED"
		if !d.Passed {
			outcome = "FAILED: " + oneLine(d.Reason)
		}
		fmt.Fprintf(tw, "  %s:\t%s %s ago (restore %s, backup %s", s.Schedule, outcome, age(now, d.CompletionTime), d.Restore, orDash(d.Backup))
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
		fmt.Fprintf(tw, "); next %s\n", stamp(s.NextDrillTime))
	}
	if len(drills) == 0 {
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
