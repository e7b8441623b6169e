package etcdbackup

import (
	"context"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// applyRetention deletes the oldest backups of cluster owner under the prefix beyond
// maxBackups, never protect (the backup just written). Backups of other clusters sharing the
// prefix, the same name's in another Kubernetes cluster among them, are never touched.
func (r *Reconciler) applyRetention(ctx context.Context, obj *etcdv1beta2.EtcdBackup, store *storage.Store, owner snapshot.Identity, protect string) {
	r.retention.Apply(ctx, r.Recorder, obj, store, retention.Request{
		Prefix:  store.Key,
		Owner:   owner,
		Kube:    r.Options.KubeID,
		Protect: protect,
		Policy:  retention.Policy{MaxBackups: int(obj.Spec.BackupPolicy.MaxBackups)},
		Now:     r.now(),
	})
}
