package v1beta2

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDrillRecoveryPoint: a drill's recovery point age is its backup's age without a capture,
// the age of the newest replayed revision with one, the backup's age again when the capture
// held nothing after the backup, and never negative when the revision came after the start.
func TestDrillRecoveryPoint(t *testing.T) {
	start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: start.Add(d)} }
	for _, tc := range []struct {
		name  string
		point *RestoredPoint
		want  time.Duration
	}{
		{"no capture", nil, time.Hour},
		{"replayed", &RestoredPoint{Revision: 900, Revisions: 400, Time: at(-3 * time.Second)}, 3 * time.Second},
		{"nothing replayed", &RestoredPoint{Revision: 500, Revisions: 0}, time.Hour},
		{"revision after the start", &RestoredPoint{Revision: 901, Revisions: 401, Time: at(2 * time.Second)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &EtcdRestore{Status: RestoreStatus{
				StartTime: at(0), BackupAge: &metav1.Duration{Duration: time.Hour}, PointInTime: tc.point,
			}}
			got := DrillResultOf(rs)
			if got.RecoveryPointAge == nil || got.RecoveryPointAge.Duration != tc.want {
				t.Fatalf("recoveryPointAge %v, want %s", got.RecoveryPointAge, tc.want)
			}
			if (got.PointInTime == nil) != (tc.point == nil) {
				t.Fatalf("pointInTime %+v, want %+v", got.PointInTime, tc.point)
			}
		})
	}
}
