package storage

import (
	"context"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// ServerWait is how long OpenServed waits for a claim's server: the backup operator starts it
// once something names the claim, and its pod takes seconds to start.
const ServerWait = 2 * time.Minute

// OpenServed is Open for the reads that run in the worker pools (a restore's verification, the
// etcd operator's choice of the backup), never in a reconcile worker: the server of a claim
// (storageType PVC) that nothing named before this restore is still starting when it begins,
// and failing at once would cost the restore a whole retry interval (30 s to a minute). So it
// tries again every second, for up to wait, until the server answers (any answer: the object
// may not exist). Other storage types are opened as Open does.
func OpenServed(ctx context.Context, l Location, secrets Secrets, ambient AmbientPolicy, wait time.Duration) (*Store, error) {
	if l.Type != etcdv1beta2.BackupStorageTypePVC {
		return Open(ctx, l, secrets, ambient)
	}
	deadline := time.Now().Add(wait)
	for {
		store, err := Open(ctx, l, secrets, ambient)
		if err == nil {
			if _, err = store.Stat(ctx, l.Key); err == nil || backend.IsNotFound(err) || backend.IsPermissionDenied(err) {
				return store, nil
			}
			_ = store.Close()
			err = reason.Transient(etcdv1beta2.ReasonStorageUnreachable, err)
		}
		if reason.Of(err) != etcdv1beta2.ReasonStorageUnreachable || !time.Now().Add(time.Second).Before(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}
