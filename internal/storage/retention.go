package storage

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/pkg/retention"
)

// Retention deletes old backups from a store and tells the object whose policy it applied (an
// EtcdBackup or an EtcdBackupSchedule) what it did, in events. The zero value is ready; one per
// controller, since it remembers whom it warned about legacy backups.
type Retention struct {
	// Timeout bounds one Apply; zero is DefaultRetentionTimeout.
	Timeout time.Duration
	// warned holds the UIDs told that legacy backups are kept, so that Warning goes out once
	// when it starts (per operator process), not after every backup.
	warned sync.Map
}

// DefaultRetentionTimeout bounds one retention pass (the listing and every delete): a store that
// stalls must not hold a reconcile worker.
const DefaultRetentionTimeout = 5 * time.Minute

// Apply applies req to store for obj, within Timeout. A failure is a Warning event and
// nothing more: the new backup is good, and retention runs again after the next one.
func (r *Retention) Apply(ctx context.Context, rec record.EventRecorder, obj client.Object, store *Store, req retention.Request) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultRetentionTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := retention.Apply(ctx, store, req)
	where := store.URLOf(req.Prefix)
	if len(out.Deleted) > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleted old backups", "count", len(out.Deleted), "prefix", req.Prefix, "cluster", req.Owner.Describe())
		rec.Eventf(obj, "Normal", "RetentionApplied", "Deleted %d old backups of %s under %s", len(out.Deleted), req.Owner.Describe(), where)
	}
	if err != nil {
		rec.Eventf(obj, "Warning", "RetentionFailed", "Deleting old backups under %s: %v", where, err)
	}
	r.reportLegacy(rec, obj, where, out.Decision)
}

// reportLegacy emits a LegacyBackupsKept Warning event on obj when d kept legacy backups and obj
// was not told yet; when d kept none, it forgets obj, so a later recurrence is reported again.
func (r *Retention) reportLegacy(rec record.EventRecorder, obj client.Object, where string, d retention.Decision) {
	if len(d.LegacyKept) == 0 && len(d.Unattributed) == 0 {
		r.warned.Delete(obj.GetUID())
		return
	}
	if _, told := r.warned.LoadOrStore(obj.GetUID(), struct{}{}); told {
		return
	}
	others := make([]string, 0, len(d.Others))
	for _, id := range d.Others {
		others = append(others, id.Describe())
	}
	if len(d.LegacyKept) > 0 {
		rec.Eventf(obj, "Warning", "LegacyBackupsKept",
			"Retention leaves %d backups without a cluster identity under %s alone (keys written before they named their cluster): "+
				"backups of other clusters share the prefix (%s), so whose they are cannot be told. Delete them by hand once they are not needed",
			len(d.LegacyKept), where, strings.Join(others, ", "))
	}
	if len(d.Unattributed) > 0 {
		rec.Eventf(obj, "Warning", "LegacyBackupsKept",
			"Retention leaves %d backups of this cluster's name without a Kubernetes cluster identity under %s alone (keys written before they named their Kubernetes cluster): "+
				"the same name's backups from other Kubernetes clusters share the prefix (%s), so which Kubernetes cluster wrote them cannot be told. Delete them by hand once they are not needed",
			len(d.Unattributed), where, strings.Join(d.OtherKubes, ", "))
	}
}
