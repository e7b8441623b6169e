package etcdbackupschedule

import (
	"context"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
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
			req.Owner = info.Identity
		}
	}
	r.retention.Apply(ctx, r.Recorder, s, store, req)
}

// openTemplateStore opens the store of the schedule's backup template.
func (r *Reconciler) openTemplateStore(ctx context.Context, s *etcdv1beta2.EtcdBackupSchedule) (*storage.Store, error) {
	loc, err := storage.FromSpec(&s.Spec.BackupTemplate.Spec)
	if err != nil {
		return nil, err
	}
	return storage.Open(ctx, loc, storage.APISecrets{Reader: r.Client, Namespace: s.Namespace}, r.Options.Ambient)
}
