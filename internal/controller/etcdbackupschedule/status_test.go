package etcdbackupschedule

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestBackupFresh: fresh for interval + starting deadline + grace after the newest success.
func TestBackupFresh(t *testing.T) {
	sched := mustParse(t, "0 */6 * * *", "")
	last := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC) // run at 00:00, done 00:05; next interval 6 h
	s := &etcdv1beta2.EtcdBackupSchedule{}
	s.Spec.StartingDeadlineSeconds = ptr.To[int64](600)
	r := &Reconciler{}
	fresh := func(now time.Time) (*metav1.Condition, time.Duration) {
		left := r.setFreshness(s, sched, now)
		return meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionBackupFresh), left
	}
	if c, _ := fresh(last); c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonNoSuccessfulBackup {
		t.Fatalf("no success: %+v", c)
	}
	s.Status.LastSuccessfulTime = &metav1.Time{Time: last}
	limit := 6*time.Hour + 10*time.Minute + FreshnessGrace
	if c, left := fresh(last.Add(time.Hour)); c.Status != metav1.ConditionTrue || left != limit-time.Hour {
		t.Fatalf("after 1 h: %+v, left %s", c, left)
	}
	if c, left := fresh(last.Add(limit + time.Second)); c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonBackupTooOld || left != 0 {
		t.Fatalf("after the limit: %+v, left %s", c, left)
	}
}
