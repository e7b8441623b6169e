package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// outcome is a stored, verified backup.
type outcome struct {
	snapshot.Result
	location string
	cluster  string
	// format is how the object is stored (codec.Format: plain, zstd, age, zstd+age).
	format string
}

// backup resolves the cluster and the store, streams one verified snapshot and, for periodic
// backups with maxBackups, deletes the oldest of this cluster's objects under the prefix. A
// one-shot backup to an exact path first claims the path (see claimExactPath): on the pass that
// claims it, backup returns a *claimedError. It runs in the worker pool on a copy of the
// object taken when it was queued, and changes nothing but the store.
func (r *Reconciler) backup(ctx context.Context, obj *etcdv1beta2.EtcdBackup) (*outcome, error) {
	spec := &obj.Spec
	tgt, err := backuptarget.Resolve(ctx, r.Client, r.APIReader, obj.Namespace, spec, r.Options.AllowedEtcdEndpoints)
	if err != nil {
		return nil, err
	}
	store, err := backuptarget.OpenStore(ctx, r.Client, obj.Namespace, spec, r.Options.Ambient)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if !spec.IsPrefixPath() {
		if err := claimExactPath(ctx, obj, store); err != nil {
			return nil, err
		}
	}

	cfg := &snapshot.Config{
		Endpoints:      tgt.Endpoints,
		Addrs:          tgt.Addrs,
		Access:         tgt.Access,
		DialTimeout:    r.Options.EtcdDialTimeout,
		RequestTimeout: r.Options.EtcdRequestTimeout,
		Now:            r.now,
		Key:            func(int64, time.Time) string { return store.Key },
	}
	if spec.BackupPolicy != nil && spec.BackupPolicy.TimeoutInSecond > 0 {
		cfg.Timeout = time.Duration(spec.BackupPolicy.TimeoutInSecond) * time.Second
	}
	members, err := snapshot.Members(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := snapshot.Pick(members)
	if err != nil {
		return nil, err
	}
	limit := r.Options.HashKVCheckMaxSize
	cfg.CheckHashKV = limit > 0 && m.DbSize <= limit
	// The key of a prefixed backup names the cluster it came from and the Kubernetes cluster it
	// runs in, so clusters sharing a prefix never write the same key and retention can tell
	// their backups apart.
	var id snapshot.Identity
	if spec.IsPrefixPath() {
		if id, err = backuptarget.Identity(ctx, r.Client, obj.Namespace, spec, m.ClusterID); err != nil {
			return nil, err
		}
		cfg.Key = func(rev int64, start time.Time) string {
			return snapshot.ClusterKeyIn(store.Key, id, r.Options.KubeID, rev, start)
		}
	}
	res, err := snapshot.TakeFrom(ctx, cfg, m, store)
	if err != nil {
		return nil, err
	}
	// The metrics' cluster label: the EtcdCluster, or for etcdEndpoints the EtcdBackup's own
	// name (bounded by objects), never a string from the spec such as an endpoint.
	cluster := tgt.Name
	if cluster == "" {
		cluster = obj.Name
	}
	out := &outcome{Result: res, location: store.URLOf(res.Key), cluster: cluster, format: store.Format.String()}
	if limit > 0 && !cfg.CheckHashKV {
		out.HashKV.Skipped = fmt.Sprintf("the database (%d bytes) is larger than --hashkv-check-max-size (%d bytes)", m.DbSize, limit)
	}
	if spec.IsPeriodic() && spec.BackupPolicy.MaxBackups > 0 {
		r.applyRetention(ctx, obj, store, id, res.Key)
	}
	return out, nil
}

// classify returns the condition reason of a failed backup and whether retrying may help, or nil
// for errors that are not about the backup (API server errors), which are returned for backoff.
func classify(err error) *reason.Error {
	if re, ok := errors.AsType[*reason.Error](err); ok {
		return re
	}
	transient := func(r string) *reason.Error { return &reason.Error{Reason: r, Transient: true, Err: err} }
	switch {
	case etcdaccess.IsAuthError(err):
		// Wrong or missing credentials, or a user without the root role: not unreachable, and
		// the same credentials fail again.
		return &reason.Error{Reason: etcdv1beta2.ReasonAuthFailed, Err: err}
	case errors.Is(err, snapshot.ErrTimeout):
		return transient(etcdv1beta2.ReasonTimeout)
	case errors.Is(err, snapshot.ErrNoHealthyMember):
		return transient(etcdv1beta2.ReasonEtcdUnreachable)
	case errors.Is(err, snapshot.ErrHashMismatch):
		// The stored object is a valid snapshot whose keyspace differs from the member's: a
		// retry would store the same disagreement, so the backup fails at once.
		return &reason.Error{Reason: etcdv1beta2.ReasonVerificationFailed, Err: err}
	case errors.Is(err, snapshot.ErrChecksumMismatch), errors.Is(err, snapshot.ErrTruncated), errors.Is(err, codec.ErrCorrupt):
		return transient(etcdv1beta2.ReasonVerificationFailed)
	case errors.Is(err, snapshot.ErrStream):
		return transient(etcdv1beta2.ReasonSnapshotFailed)
	case errors.Is(err, snapshot.ErrStorage) && backend.IsPermissionDenied(err):
		return &reason.Error{Reason: etcdv1beta2.ReasonInvalidCredentials, Err: err}
	case errors.Is(err, snapshot.ErrStorage):
		return transient(etcdv1beta2.ReasonStorageUnreachable)
	}
	return nil
}

// failureMessage is the user-facing message of a failed attempt.
func failureMessage(err error) string {
	msg := err.Error()
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	return msg
}
