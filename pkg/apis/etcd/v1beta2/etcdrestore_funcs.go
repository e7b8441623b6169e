package v1beta2

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DrillResultOf is what the finished drill rs showed, as a schedule records it in
// status.lastDrill (and `kubectl etcd drill now` reports it): passed when the restore completed
// and its verification passed on every member; otherwise the reason it failed with, or
// VerificationFailed for a restore that completed without a passed verification.
func DrillResultOf(rs *EtcdRestore) *DrillResult {
	st := &rs.Status
	res := &DrillResult{
		Restore:        rs.Name,
		Backup:         st.BackupLocation,
		Passed:         meta.IsStatusConditionTrue(st.Conditions, RestoreConditionComplete) && st.Verification != nil && st.Verification.Passed,
		CompletionTime: st.CompletionTime.DeepCopy(),
		TimeToRestore:  st.Duration.DeepCopy(),
		BackupAge:      st.BackupAge.DeepCopy(),
	}
	if st.Verification != nil {
		res.Keys = st.Verification.Keys
	}
	res.RecoveryPointAge = st.BackupAge.DeepCopy()
	if pt := st.PointInTime; pt != nil {
		res.PointInTime = pt.DeepCopy()
		if pt.Revisions > 0 && pt.Time != nil && st.StartTime != nil {
			res.RecoveryPointAge = &metav1.Duration{Duration: max(0, st.StartTime.Sub(pt.Time.Time).Round(time.Second))}
		}
	}
	if !res.Passed {
		res.Reason = ReasonVerificationFailed
		if c := meta.FindStatusCondition(st.Conditions, RestoreConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			res.Reason = c.Reason
		}
	}
	return res
}

// DrillPoint is the pointInTime of the schedule's drills: the newest point captured ({}) when
// it runs continuousCapture, so that the drill proves the capture's recovery point; nil
// otherwise (the backup alone).
func (s *EtcdBackupSchedule) DrillPoint() *PointInTime {
	if s.Spec.ContinuousCapture == nil {
		return nil
	}
	return &PointInTime{}
}
