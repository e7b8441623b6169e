package etcdbackupschedule

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// applyRetention deletes old backup objects under the template's path after a new successful
// backup (one that prevSuccess, the status before this pass, did not know yet). Only backups of
// the cluster the newest successful backup came from (the identity in its key) are deleted, so
// schedules of several clusters may share a prefix; the newest successful backup is protected;
// only keys this project wrote under the prefix are touched. Failures are reported as a Warning
// event and retried after the next success.
func (r *Reconciler) applyRetention(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, prevSuccess string, now time.Time) {
	ret := s.Spec.Retention
	if ret == nil || s.Status.LastSuccessfulBackup == "" || s.Status.LastSuccessfulBackup == prevSuccess {
		return
	}
	policy := retention.Policy{}
	if ret.MaxBackups != nil {
		policy.MaxBackups = int(*ret.MaxBackups)
	}
	if ret.MaxAge != nil {
		policy.MaxAge = ret.MaxAge.Duration
	}
	store, err := r.openTemplateStore(ctx, s)
	if err != nil {
		r.Recorder.Eventf(s, "Warning", "RetentionFailed", "Opening the backup store: %v", err)
		return
	}
	defer store.Close()
	req := retention.Request{Prefix: store.Key, Policy: policy, Now: now}
	if _, bucket, key, ok := storage.ParseURL(s.Status.LastSuccessfulLocation); ok && bucket == store.Bucket {
		req.Protect = key
		// Without an identity (a key of an older operator) only legacy backups are considered.
		if info, ok := snapshot.ParseKey(store.Key, key); ok {
			req.Owner, req.Kube = info.Identity, info.Kube
		}
	}
	r.retention.Apply(ctx, r.Recorder, s, store, req)
	if req.Owner.Tagged() {
		r.pruneSegments(ctx, s, store, req.Owner)
	}
}

// pruneSegments deletes the continuous-capture segments under the template's path that no
// backup left needs (capture.Prune), for the cluster of the newest successful backup (owner;
// by name, so the segments of its earlier cluster IDs go once their backups are gone). Runs
// after backup retention, also when the capture was turned off since. A failure is a Warning
// event, retried after the next success.
func (r *Reconciler) pruneSegments(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule, store *storage.Store, owner snapshot.Identity) {
	ctx, cancel := context.WithTimeout(ctx, storage.DefaultRetentionTimeout)
	defer cancel()
	infos, err := store.List(ctx, store.Key)
	if err != nil {
		r.Recorder.Eventf(s, "Warning", "RetentionFailed", "Listing the backups to prune capture segments: %v", err)
		return
	}
	oldest := map[snapshot.Identity]int64{}
	for _, b := range retention.Parse(store.Key, infos) {
		if rev, ok := oldest[b.Identity]; b.Tagged() && (!ok || b.Revision < rev) {
			oldest[b.Identity] = b.Revision
		}
	}
	deleted, err := capture.Prune(ctx, store, store.Key, owner.Same, oldest)
	if len(deleted) > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleted capture segments no backup needs", "count", len(deleted), "cluster", owner.Describe())
		r.Recorder.Eventf(s, "Normal", "RetentionApplied", "Deleted %d continuous-capture segments of %s that no backup kept needs", len(deleted), owner.Describe())
	}
	if err != nil {
		r.Recorder.Eventf(s, "Warning", "RetentionFailed", "Deleting capture segments: %v", err)
	}
}

// openTemplateStore opens the store of the schedule's backup template.
func (r *Reconciler) openTemplateStore(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule) (*storage.Store, error) {
	loc, err := storage.FromSpec(&s.Spec.BackupTemplate.Spec)
	if err != nil {
		return nil, err
	}
	return storage.Open(ctx, loc, storage.APISecrets{Reader: r.Client, Namespace: s.Namespace}, r.Options.Ambient)
}
