//go:build e2e

package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// report is what the drill measured; String renders it.
type report struct {
	Namespace, Cluster, RestoreFrom string
	Continuous                      bool

	DatasetKeys  int
	DatasetBytes int64
	LoadTime     time.Duration
	TrickleKeys  int

	Backup         string
	BackupLocation string
	BackupPath     string // <bucket>/<key>
	BackupSize     int64
	BackupDuration time.Duration
	BackupRevision int64 // the EtcdBackup's status.etcdRevision
	BackupDone     time.Time

	RevisionAtDisaster int64
	DisasterTime       time.Time
	PodsDeletedAgain   int // pods the etcd operator recreated on volumes being deleted

	Restore  *etcdv1beta2.EtcdRestore
	Restored time.Time // when the EtcdRestore reported success

	// AfterBackup keys were written after the backup's revision; AfterBackupBack of them came
	// back (the continuous capture replayed them).
	AfterBackup, AfterBackupBack int

	Verification *verification
	MemberKeys   map[string]int64
	VerifiedTime time.Time
	Steps        []stepTime
	Total        time.Duration
}

// stepTime is how long one step of the drill took.
type stepTime struct {
	Name  string
	Took  time.Duration
	start time.Time
}

func (r *report) setBackup(b *etcdv1beta2.EtcdBackup) {
	r.Backup, r.BackupLocation, r.BackupSize = b.Name, b.Status.Location, b.Status.Size
	r.BackupPath = strings.TrimPrefix(b.Status.Location, string(etcdv1beta2.BackupStorageTypeS3)+"://")
	r.BackupRevision = b.Status.EtcdRevision
	if b.Status.Duration != nil {
		r.BackupDuration = b.Status.Duration.Duration
	}
	if b.Status.CompletionTime != nil {
		r.BackupDone = b.Status.CompletionTime.Time
	}
}

func (r *report) setRestore(rs *etcdv1beta2.EtcdRestore) {
	r.Restore = rs
	if rs.Status.CompletionTime != nil {
		r.Restored = rs.Status.CompletionTime.Time
	}
}

// cut is the revision that separates kept from lost writes: the revision in the snapshot, as
// the restore read it, else the EtcdBackup's record of it.
func (r *report) cut() int64 {
	if r.Restore != nil && r.Restore.Status.BackupRevision != 0 {
		return r.Restore.Status.BackupRevision
	}
	return r.BackupRevision
}

func (r *report) verified() *etcdv1beta2.RestoreVerification {
	if r.Restore == nil || r.Restore.Status.Verification == nil {
		return &etcdv1beta2.RestoreVerification{}
	}
	return r.Restore.Status.Verification
}

func (r *report) membersAgree() bool {
	if len(r.MemberKeys) != 3 || r.Verification == nil {
		return false
	}
	for _, n := range r.MemberKeys {
		if n != int64(r.Verification.Checked) {
			return false
		}
	}
	return true
}

// passed: the restore succeeded and verified itself on every member, and the demo's own
// key-by-key check found exactly the backup's keys with their values on every member.
func (r *report) passed() bool {
	return r.Restore != nil && r.Restore.Status.Succeeded && r.verified().Passed &&
		r.Verification != nil && r.Verification.ok() && r.membersAgree() &&
		r.verified().Keys == int64(r.Verification.Checked)
}

func (r *report) String() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("==================== etcd disaster-recovery drill ====================")
	w("cluster        %s/%s, 3 members on PersistentVolumeClaims", r.Namespace, r.Cluster)
	w("dataset        %d keys, %s (keys+values, values %d B..%d KiB), loaded in %s",
		r.DatasetKeys, mib(r.DatasetBytes), minValue, maxValue/1024, round(r.LoadTime))
	w("               + %d keys written by the application after the load, until the disaster", r.TrickleKeys)
	if r.Backup == "" {
		w("backup         none completed")
	} else {
		w("backup         EtcdBackup %s (EtcdBackupSchedule %s, */1 * * * *)", r.Backup, scheduleName)
		w("               object %s, %s, took %s, revision %d, completed %s",
			r.BackupLocation, mib(r.BackupSize), round(r.BackupDuration), r.BackupRevision, r.BackupDone.UTC().Format(time.TimeOnly))
	}
	if !r.DisasterTime.IsZero() {
		line := fmt.Sprintf("disaster       every member pod and volume deleted at %s", r.DisasterTime.UTC().Format(time.TimeOnly))
		if r.PodsDeletedAgain > 0 {
			line += fmt.Sprintf("; %d pods the etcd operator recreated on volumes being deleted were deleted again", r.PodsDeletedAgain)
		}
		w("%s", line)
	}
	if !r.DisasterTime.IsZero() && r.Backup != "" {
		lostKeys := 0
		if r.Verification != nil {
			lostKeys = r.Verification.Lost
		}
		if r.Continuous {
			w("RPO            continuous capture (segments every %s): %d revisions lost (restored %d, cluster at the disaster %d), %d keys;",
				captureInterval, r.RevisionAtDisaster-r.cut(), r.cut(), r.RevisionAtDisaster, lostKeys)
			w("               %d keys written after the backup (revision %d), %d of them came back", r.AfterBackup, r.BackupRevision, r.AfterBackupBack)
		} else {
			w("RPO            %s since the backup completed; %d revisions lost (backup %d, cluster at the disaster %d), %d keys",
				round(r.DisasterTime.Sub(r.BackupDone)), r.RevisionAtDisaster-r.cut(), r.cut(), r.RevisionAtDisaster, lostKeys)
		}
	}
	if rs := r.Restore; rs != nil {
		st := rs.Status
		how := "backupStorageType: S3, s3.path: " + r.BackupPath
		if rs.Spec.BackupScheduleRef != nil {
			how = "backupScheduleRef: " + rs.Spec.BackupScheduleRef.Name
		}
		w("restore        EtcdRestore %s (%s): phase %s, succeeded %t%s", rs.Name, how, st.Phase, st.Succeeded, reasonOf(st.Reason))
		w("               restored %s (%s, revision %d, backup age %s), seed member %s",
			st.BackupLocation, mib(st.BackupSize), st.BackupRevision, dur(st.BackupAge), st.SeedMember)
		if pt := st.PointInTime; pt != nil {
			w("               point in time: revision %d, %d revisions of the capture replayed onto the backup", pt.Revision, pt.Revisions)
		}
		line := fmt.Sprintf("RTO            %s (EtcdRestore status.duration)", dur(st.Duration))
		if !r.VerifiedTime.IsZero() {
			line += fmt.Sprintf("; %s from the disaster to a verified cluster", round(r.VerifiedTime.Sub(r.DisasterTime)))
		}
		w("%s", line)
		v := r.verified()
		w("               restore's own check: %d keys, hash %d at revision %d, %d members verified, passed %t",
			v.Keys, v.Hash, v.Revision, v.MembersVerified, v.Passed)
	}
	if v := r.Verification; v != nil {
		w("verification   %d keys checked key by key (value bytes and lease compared; %d on leases): %d mismatches, %d missing",
			v.Checked, v.Leased, v.Mismatches, v.Missing)
		w("               %d keys written after revision %d: %d gone as expected, %d present (must be 0); %d unknown keys",
			v.Lost, r.cut(), v.Lost-v.Survivors, v.Survivors, v.Unknown)
		w("               keys per member (serializable reads): %s", memberCounts(r.MemberKeys))
		for _, e := range v.Examples {
			w("               ! %s", e)
		}
	}
	var steps []string
	for _, st := range r.Steps {
		steps = append(steps, fmt.Sprintf("%s %s", st.Name, round(st.Took)))
	}
	w("wall time      %s total: %s", round(r.Total), strings.Join(steps, ", "))
	if r.passed() {
		w("result         PASS")
	} else {
		w("result         FAIL")
	}
	return b.String()
}

func memberCounts(m map[string]int64) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func reasonOf(s string) string {
	if s == "" {
		return ""
	}
	return ", reason: " + s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

func since(t time.Time) time.Duration { return round(time.Since(t)) }

func dur(d *metav1.Duration) string {
	if d == nil {
		return "-"
	}
	return round(d.Duration).String()
}
