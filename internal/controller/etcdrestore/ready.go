package etcdrestore

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/readiness"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// setReady sets Ready (with Reconciling or Stalled) from Complete and Failed: Ready once the
// restore succeeded; Stalled with the failure's reason once it failed; Reconciling, with the
// reason of what it does or waits for (Restoring, RestoreInProgress), until then.
func setReady(rs *etcdv1beta2.EtcdRestore) {
	readiness.Set(&rs.Status.Conditions, rs.Generation, restoreVerdict(rs.Status.Conditions))
}

func restoreVerdict(conds []metav1.Condition) readiness.Verdict {
	return readiness.OfOutcome(conds, etcdv1beta2.RestoreConditionComplete, etcdv1beta2.RestoreConditionFailed,
		readiness.Verdict{State: readiness.Reconciling, Reason: etcdv1beta2.ReasonRestoring, Message: "the restore has not started"})
}
