package kubectletcd

import (
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// success is one successful backup as a schedule or an EtcdBackup recorded it.
type success struct {
	by       string // schedule/<name> or backup/<name>
	backup   string
	time     *metav1.Time
	location string
}

// newestSuccess is the newest successful backup r's schedules and backups recorded, or nil.
func newestSuccess(r *related) *success {
	var best *success
	consider := func(s success) {
		if s.time != nil && (best == nil || s.time.After(best.time.Time)) {
			best = &s
		}
	}
	for _, s := range r.schedules {
		consider(success{by: "schedule/" + s.Name, backup: s.Status.LastSuccessfulBackup, time: s.Status.LastSuccessfulTime, location: s.Status.LastSuccessfulLocation})
	}
	for _, b := range r.backups {
		if b.Status.Succeeded || b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
			consider(success{by: "backup/" + b.Name, backup: b.Name, time: b.Status.LastSuccessDate, location: b.Status.Location})
		}
	}
	return best
}

// writeBackupSummary prints the newest backup with its RPO and a line per schedule.
func writeBackupSummary(w io.Writer, r *related, now time.Time) {
	fmt.Fprintln(w, "\nBackups:")
	tw := table(w)
	if s := newestSuccess(r); s != nil {
		fmt.Fprintf(tw, "  Newest:\t%s (%s) at %s\n", orDash(s.backup), s.by, stamp(s.time))
		fmt.Fprintf(tw, "  Location:\t%s\n", orDash(s.location))
		fmt.Fprintf(tw, "  RPO:\t%s (now - newest success)\n", duration.HumanDuration(now.Sub(s.time.Time)))
	} else {
		fmt.Fprintln(tw, "  Newest:\tnone: no schedule or backup of this cluster has succeeded")
	}
	_ = tw.Flush()
	if len(r.schedules) == 0 {
		fmt.Fprintln(w, "  (no EtcdBackupSchedule backs up this cluster)")
		return
	}
	tw = table(w)
	fmt.Fprintln(tw, "  SCHEDULE\tCRON\tLAST SUCCESS\tNEXT\tFRESH\tACTIVE")
	for _, s := range r.schedules {
		fresh := "-"
		if c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionBackupFresh); c != nil {
			fresh = string(c.Status)
			if c.Status != metav1.ConditionTrue {
				fresh += " (" + c.Reason + ")"
			}
		}
		last := "-"
		if s.Status.LastSuccessfulTime != nil {
			last = age(now, s.Status.LastSuccessfulTime) + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\n", s.Name, s.Spec.Schedule, last, stamp(s.Status.NextScheduleTime), fresh, len(s.Status.Active))
	}
	_ = tw.Flush()
}
