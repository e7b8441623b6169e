package etcdbackup

import (
	"context"
	"strings"
	"sync"

	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// applyRetention deletes the oldest backups of cluster owner under the prefix beyond
// maxBackups, never protect (the backup just written). Backups of other clusters sharing the
// prefix are never touched. Failures are a Warning event: the backup itself is good, and
// retention runs again after the next one.
func (r *Reconciler) applyRetention(ctx context.Context, obj *etcdv1beta2.EtcdBackup, store *Store, owner snapshot.Identity, protect string) {
	req := retention.Request{
		Prefix:  store.Key,
		Owner:   owner,
		Protect: protect,
		Policy:  retention.Policy{MaxBackups: int(obj.Spec.BackupPolicy.MaxBackups)},
		Now:     r.now(),
	}
	out, err := retention.Apply(ctx, store, req)
	if len(out.Deleted) > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleted old backups", "count", len(out.Deleted), "prefix", store.Key, "cluster", owner.Describe())
	}
	if err != nil {
		r.Recorder.Eventf(obj, "Warning", "RetentionFailed", "Deleting old backups under %s: %v", store.Key, err)
	}
	r.legacy.Report(r.Recorder, obj, store.Location(store.Key), out.Decision)
}

// LegacyWarnings remembers which objects were told that retention left legacy backups alone,
// so the Warning event goes out once when that starts (per operator process), not after every
// backup. The zero value is ready to use.
type LegacyWarnings struct{ warned sync.Map }

// Report emits a LegacyBackupsKept Warning event on obj when d kept legacy backups and obj was
// not told yet; when d kept none, it forgets obj, so a later recurrence is reported again.
func (w *LegacyWarnings) Report(rec record.EventRecorder, obj client.Object, prefix string, d retention.Decision) {
	if len(d.LegacyKept) == 0 {
		w.warned.Delete(obj.GetUID())
		return
	}
	if _, told := w.warned.LoadOrStore(obj.GetUID(), struct{}{}); told {
		return
	}
	others := make([]string, 0, len(d.Others))
	for _, id := range d.Others {
		others = append(others, id.Describe())
	}
	rec.Eventf(obj, "Warning", "LegacyBackupsKept",
		"Retention leaves %d backups without a cluster identity under %s alone (keys written before they named their cluster): "+
			"backups of other clusters share the prefix (%s), so whose they are cannot be told. Delete them by hand once they are not needed",
		len(d.LegacyKept), prefix, strings.Join(others, ", "))
}
