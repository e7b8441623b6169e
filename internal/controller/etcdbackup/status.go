package etcdbackup

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// recordSuccess writes a verified backup into status, events and metrics.
func (r *Reconciler) recordSuccess(obj *etcdv1beta2.EtcdBackup, out *outcome) {
	st := &obj.Status
	done := metav1.NewTime(out.Start.Add(out.Duration))
	st.Succeeded, st.Reason = true, ""
	st.EtcdVersion, st.EtcdRevision = out.Member.Version, out.Member.Revision
	st.LastSuccessDate, st.CompletionTime = &done, &done
	st.StartTime = &metav1.Time{Time: out.Start}
	st.Duration = &metav1.Duration{Duration: out.Duration}
	st.Location, st.Size, st.SHA256, st.Member = out.location, out.Size, out.SHA256, out.Member.Endpoint
	st.Format = out.format
	st.ObservedGeneration = obj.Generation
	st.Phase = etcdv1beta2.BackupPhaseCompleted
	if !obj.Spec.IsPeriodic() {
		st.Attempts++
	}
	msg := fmt.Sprintf("Verified snapshot at revision %d (%d bytes, sha256 %s) from %s stored at %s (%s)",
		out.Member.Revision, out.Size, out.SHA256, out.Member.Endpoint, out.location, out.format)
	st.KeyspaceCheck = nil
	if h := out.HashKV; h.Checked || h.Skipped != "" {
		st.KeyspaceCheck = &etcdv1beta2.KeyspaceCheck{Checked: h.Checked, Hash: int64(h.Hash), Revision: h.Revision,
			CompactRevision: h.CompactRevision, Skipped: h.Skipped}
		if h.Checked {
			msg += fmt.Sprintf("; its keyspace hash at revision %d equals the member's HashKV (%d)", h.Revision, h.Hash)
		} else {
			msg += "; not checked against the member's HashKV: " + h.Skipped
		}
	}
	r.setConditions(obj, metav1.ConditionTrue, metav1.ConditionFalse, etcdv1beta2.ReasonBackupSucceeded, msg)
	r.Recorder.Event(obj, "Normal", etcdv1beta2.ReasonBackupSucceeded, msg)

	backupDuration.WithLabelValues(string(obj.Spec.StorageType)).Observe(out.Duration.Seconds())
	backupBytes.WithLabelValues(obj.Namespace, out.cluster).Add(float64(out.Size))
	backupLastSize.WithLabelValues(obj.Namespace, out.cluster).Set(float64(out.Size))
	backupLastSuccess.WithLabelValues(obj.Namespace, out.cluster).Set(float64(done.Unix()))
}

// recordFailure writes a failed attempt into status, events and metrics and decides when to try
// again: a one-shot backup retries transient failures up to MaxAttempts with backoff and is then
// Failed for good; a periodic one tries again at its next interval. Errors that are not about
// the backup (API server errors) are returned for controller-runtime's backoff.
func (r *Reconciler) recordFailure(obj *etcdv1beta2.EtcdBackup, err error, now time.Time) (ctrl.Result, error) {
	re := classify(err)
	if re == nil {
		return ctrl.Result{}, err
	}
	st := &obj.Status
	st.CompletionTime = &metav1.Time{Time: now}
	if st.StartTime != nil {
		st.Duration = &metav1.Duration{Duration: now.Sub(st.StartTime.Time)}
	}
	st.Succeeded = false
	st.Reason = failureMessage(err)
	backupFailures.WithLabelValues(re.Reason).Inc()

	if obj.Spec.IsPeriodic() {
		st.Phase = etcdv1beta2.BackupPhaseFailed
		r.setConditions(obj, metav1.ConditionFalse, metav1.ConditionTrue, re.Reason, st.Reason)
		r.Recorder.Event(obj, "Warning", re.Reason, st.Reason)
		return ctrl.Result{RequeueAfter: r.untilDue(obj, now)}, nil
	}
	st.Attempts++
	if re.Transient && st.Attempts < MaxAttempts {
		wait := r.backoff(st.Attempts)
		st.Phase = etcdv1beta2.BackupPhasePending
		msg := fmt.Sprintf("Attempt %d of %d failed, retrying in %s: %s", st.Attempts, MaxAttempts, wait, st.Reason)
		r.setConditions(obj, metav1.ConditionFalse, metav1.ConditionFalse, re.Reason, msg)
		r.Recorder.Event(obj, "Warning", re.Reason, msg)
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	st.Phase = etcdv1beta2.BackupPhaseFailed
	r.setConditions(obj, metav1.ConditionFalse, metav1.ConditionTrue, re.Reason, st.Reason)
	r.Recorder.Event(obj, "Warning", re.Reason, st.Reason)
	return ctrl.Result{}, nil
}

func (r *Reconciler) setConditions(obj *etcdv1beta2.EtcdBackup, complete, failed metav1.ConditionStatus, reason, msg string) {
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{etcdv1beta2.BackupConditionComplete, complete}, {etcdv1beta2.BackupConditionFailed, failed}} {
		meta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
			Type: c.typ, Status: c.status, Reason: reason, Message: msg, ObservedGeneration: obj.Generation,
		})
	}
	setReady(obj)
}
