package kubectletcd

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// success is one successful backup as a schedule or an EtcdBackup recorded it.
type success struct {
	// By is schedule/<name> or backup/<name>; Backup the EtcdBackup's name.
	By       string       `json:"by"`
	Backup   string       `json:"backup,omitempty"`
	Time     *metav1.Time `json:"time"`
	Location string       `json:"location,omitempty"`
}

// newestSuccess is the newest successful backup r's schedules and backups recorded, or nil.
func newestSuccess(r *related) *success {
	var best *success
	consider := func(s success) {
		if s.Time != nil && (best == nil || s.Time.After(best.Time.Time)) {
			best = &s
		}
	}
	for _, s := range r.schedules {
		consider(success{By: "schedule/" + s.Name, Backup: s.Status.LastSuccessfulBackup, Time: s.Status.LastSuccessfulTime, Location: s.Status.LastSuccessfulLocation})
	}
	for _, b := range r.backups {
		if b.Status.Succeeded || b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
			consider(success{By: "backup/" + b.Name, Backup: b.Name, Time: b.Status.LastSuccessDate, Location: b.Status.Location})
		}
	}
	return best
}

// writeBackupSummary prints the newest backup with its RPO and a line per schedule.
func writeBackupSummary(w io.Writer, b *statusBackups, now time.Time) {
	fmt.Fprintln(w, "\nBackups:")
	tw := table(w)
	if s := b.Newest; s != nil {
		fmt.Fprintf(tw, "  Newest:\t%s (%s) at %s\n", orDash(s.Backup), s.By, stamp(s.Time))
		fmt.Fprintf(tw, "  Location:\t%s\n", orDash(s.Location))
		fmt.Fprintf(tw, "  RPO:\t%s (now - newest success)\n", duration.HumanDuration(time.Duration(b.RPOSeconds)*time.Second))
	} else {
		fmt.Fprintln(tw, "  Newest:\tnone: no schedule or backup of this cluster has succeeded")
	}
	_ = tw.Flush()
	if len(b.Schedules) == 0 {
		fmt.Fprintln(w, "  (no EtcdBackupSchedule backs up this cluster)")
		return
	}
	tw = table(w)
	fmt.Fprintln(tw, "  SCHEDULE\tCRON\tLAST SUCCESS\tNEXT\tFRESH\tACTIVE")
	for _, s := range b.Schedules {
		fresh := orDash(s.Fresh)
		if s.Fresh != "" && s.Fresh != string(metav1.ConditionTrue) {
			fresh += " (" + s.FreshReason + ")"
		}
		last := "-"
		if s.LastSuccessfulTime != nil {
			last = age(now, s.LastSuccessfulTime) + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\n", s.Name, s.Schedule, last, stamp(s.NextScheduleTime), fresh, s.Active)
	}
	_ = tw.Flush()
}
