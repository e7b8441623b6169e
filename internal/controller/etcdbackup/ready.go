package etcdbackup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/readiness"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// setReady records that the pass reconciled the spec (observedGeneration) and sets Ready (with
// Reconciling or Stalled) from Complete and Failed: Ready once the backup (a periodic one's last
// attempt) completed; Reconciling while a one-shot backup waits to retry a transient failure;
// Stalled once it failed for good, or while a periodic backup's last attempt failed.
func setReady(obj *etcdv1beta2.EtcdBackup) {
	obj.Status.ObservedGeneration = obj.Generation
	readiness.Set(&obj.Status.Conditions, obj.Generation, backupVerdict(obj.Status.Conditions))
}

func backupVerdict(conds []metav1.Condition) readiness.Verdict {
	return readiness.OfOutcome(conds, etcdv1beta2.BackupConditionComplete, etcdv1beta2.BackupConditionFailed,
		readiness.Verdict{State: readiness.Reconciling, Reason: string(etcdv1beta2.BackupPhasePending), Message: "the backup has not run yet"})
}
