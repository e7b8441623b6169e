package etcdbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// captureStatusEvery is how often status.capture is refreshed while a capture runs; metrics
// carry the live values.
const captureStatusEvery = 30 * time.Second

// backupRequestWindow: the full backups a capture asks for are named after the start of this
// window (like a run), so a pass that sees the capture still waiting for a backup that
// completed, or failed, in the same window starts no other.
const backupRequestWindow = 5 * time.Minute

// reconcileCapture runs the schedule's continuous capture while the schedule is Scheduling
// (stops it otherwise, or without spec.continuousCapture), records where it stands in
// status.capture and the Capturing condition, starts a full backup when the capture has none to
// continue, and wakes a waiting capture once a new backup succeeded (prevSuccess is the newest
// success before this pass). It returns when to look again (0: no need).
func (r *Reconciler) reconcileCapture(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, scheduling bool, prevSuccess string, now time.Time) (time.Duration, error) {
	key := client.ObjectKeyFromObject(s)
	if s.Spec.ContinuousCapture == nil {
		r.captures.stop(key)
		s.Status.Capture = nil
		meta.RemoveStatusCondition(&s.Status.Conditions, etcdv1beta2.ScheduleConditionCapturing)
		return 0, nil
	}
	if !scheduling {
		r.captures.stop(key)
		sc := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionScheduling)
		r.setCondition(s, etcdv1beta2.ScheduleConditionCapturing, false, sc.Reason, "The schedule is not Scheduling, so nothing is captured: "+sc.Message)
		return 0, nil
	}
	st := r.captures.ensure(s)
	if s.Status.LastSuccessfulBackup != prevSuccess {
		r.captures.wake(key)
	}
	cs := s.Status.Capture
	if cs == nil {
		cs = &etcdv1beta2.CaptureStatus{}
		s.Status.Capture = cs
	}
	if st.Identity.Tagged() {
		cs.ClusterID = fmt.Sprintf("%016x", st.Identity.ClusterID)
		cs.StartRevision, cs.EtcdRevision, cs.Segments = st.Start, st.Progress.EtcdRevision, st.Progress.Segments
		cs.CapturedRevision, cs.CapturedTime = st.Captured, nil
		if !st.CapturedTime.IsZero() {
			cs.CapturedTime = &metav1.Time{Time: st.CapturedTime}
		}
	}
	msg := st.Message
	if st.Running && st.Progress.Segments > 0 {
		msg = fmt.Sprintf("Capturing %s: revision %d stored (received %s), etcd at revision %d, %d segments since revision %d",
			st.Identity.Describe(), st.Captured, st.CapturedTime.UTC().Format(time.RFC3339), st.Progress.EtcdRevision, st.Progress.Segments, st.Start)
	}
	if st.NeedsBackup {
		name, err := r.requestBackup(ctx, s, now)
		if err != nil {
			return 0, err
		}
		if name != "" {
			cs.LastBackupRequest = name
			msg += "; started EtcdBackup " + name
		}
	}
	r.setCondition(s, etcdv1beta2.ScheduleConditionCapturing, st.Running, st.Reason, msg)
	return captureStatusEvery, nil
}

// requestBackup starts a full backup for the capture to continue, unless a backup of the
// schedule runs or one succeeded within the current request window; it returns the name of
// the backup started ("" if none).
func (r *Reconciler) requestBackup(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, now time.Time) (string, error) {
	if len(s.Status.Active) > 0 {
		return "", nil
	}
	window := now.Truncate(backupRequestWindow)
	if t := s.Status.LastSuccessfulTime; t != nil && !t.Time.Before(window) {
		return "", nil // the capture is woken and looks at it
	}
	b, err := r.createBackup(ctx, s, window)
	if err != nil {
		return "", err
	}
	if b.IsFinished() {
		return "", nil
	}
	s.Status.Active = append(s.Status.Active, b.Name)
	ctrl.LoggerFrom(ctx).Info("Started a full backup for the continuous capture", "backup", b.Name)
	return b.Name, nil
}

// captureFailure maps why a capture stopped to the Capturing condition's reason and message,
// and says whether the capture needs a new full backup.
func captureFailure(err error) (why, msg string, needsBackup bool) {
	msg = "The capture stopped and retries: " + err.Error()
	if re, ok := errors.AsType[*reason.Error](err); ok {
		return re.Reason, msg, false
	}
	switch {
	case errors.Is(err, errNoBase):
		return etcdv1beta2.ReasonWaitingForBackup, "The capture waits for a full backup to continue: " + err.Error(), true
	case errors.Is(err, capture.ErrCompacted), errors.Is(err, capture.ErrClusterChanged):
		return etcdv1beta2.ReasonWaitingForBackup, msg, false
	case errors.Is(err, capture.ErrConflict):
		return etcdv1beta2.ReasonCaptureConflict, msg, false
	case errors.Is(err, capture.ErrBufferFull), errors.Is(err, errStore):
		return etcdv1beta2.ReasonStorageUnreachable, msg, false
	case errors.Is(err, capture.ErrCorrupt):
		return etcdv1beta2.ReasonVerificationFailed, msg, false
	case etcdaccess.IsAuthError(err):
		return etcdv1beta2.ReasonAuthFailed, msg, false
	case errors.Is(err, snapshot.ErrNoHealthyMember):
		return etcdv1beta2.ReasonEtcdUnreachable, msg, false
	case backend.IsPermissionDenied(err):
		return etcdv1beta2.ReasonInvalidCredentials, msg, false
	}
	return etcdv1beta2.ReasonEtcdUnreachable, msg, false
}

// errStore marks a failure of the store while a capture looked for where to start.
var errStore = errors.New("the backup store failed")
