package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// reasonBackupVerified is the BackupVerified condition's reason when it is True.
const reasonBackupVerified = "ChecksumsMatched"

// checked is a backup read whole in the worker pool.
type checked struct {
	src  *source
	got  restoreseed.Fetched
	took time.Duration
	// point is what spec.pointInTime resolved to (nil without one).
	point *etcdv1beta2.RestoredPoint
}

// verifyBackup finds the backup and reads it whole, checking etcd's trailing checksum and the
// size and sha256 the backup recorded, before any cluster is touched. A bad backup fails the
// restore here, with the existing cluster exactly as it was. The read runs in the worker pool
// (internal/workpool), outside the reconcile workers: this pass queues it, and the pass the
// pool's event brings records what it found.
func (r *Reconciler) verifyBackup(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(rs)
	done, pending := r.Pool.Take(key, string(rs.UID))
	switch {
	case pending:
		// The pool's event brings the next pass; the requeue is a safety net.
		return ctrl.Result{RequeueAfter: requeueBackoff}, nil
	case done == nil:
		snap := rs.DeepCopy()
		r.Pool.Submit(key, string(rs.UID), func(ctx context.Context) (any, error) { return r.readBackup(ctx, snap) })
		return ctrl.Result{RequeueAfter: requeueBackoff}, nil
	}
	if done.Err != nil {
		// The next attempt waits out the backoff even if a status change wakes us sooner.
		r.Pool.Hold(key, string(rs.UID), time.Now().Add(requeueBackoff))
	}
	if fe, ok := errors.AsType[*fetchError](done.Err); ok {
		err := fe.err
		switch why := reason.Of(err); why {
		case "":
			return ctrl.Result{}, err
		case etcdv1beta2.ReasonStorageUnreachable:
			return ctrl.Result{}, reason.Transient(why, err)
		default:
			r.setCondition(rs, etcdv1beta2.RestoreConditionBackupVerified, metav1.ConditionFalse, why, err.Error())
			return ctrl.Result{}, reason.Errorf(why, "%w; no cluster was changed", err)
		}
	}
	if done.Err != nil {
		return ctrl.Result{}, done.Err // finding the backup or opening its store failed
	}
	c := done.Value.(*checked)
	src, got := c.src, c.got
	rs.Status.BackupLocation = src.loc.URL()
	rs.Status.BackupSize = got.Size
	rs.Status.BackupSHA256 = got.SHA256
	rs.Status.BackupRevision = src.revision
	rs.Status.PointInTime = c.point
	pin(rs, src)
	if src.taken != nil {
		rs.Status.BackupTime = src.taken.DeepCopy()
		rs.Status.BackupAge = &metav1.Duration{Duration: rs.Status.StartTime.Sub(src.taken.Time).Round(time.Second)}
	}
	msg := fmt.Sprintf("%s: %d bytes, sha256 %s, etcd checksum valid (read in %s)", src.loc.URL(), got.Size, got.SHA256, c.took.Round(time.Millisecond))
	if pt := c.point; pt != nil {
		msg += fmt.Sprintf("; the point in time resolved to revision %d (%d captured revisions replayed onto the backup, exact: %v)", pt.Revision, pt.Revisions, pt.Exact)
	}
	r.setCondition(rs, etcdv1beta2.RestoreConditionBackupVerified, metav1.ConditionTrue, reasonBackupVerified, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "BackupVerified", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "backup verified; preparing the cluster")
	return ctrl.Result{RequeueAfter: requeueNow}, nil
}

// fetchError is a failed read of the backup itself (not of finding it or opening its store).
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// readBackup resolves the backup rs names and reads it whole under the backup's deadline. It
// runs in the worker pool on a copy of rs and changes nothing.
func (r *Reconciler) readBackup(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*checked, error) {
	src, err := r.resolve(ctx, rs)
	if err != nil {
		return nil, err
	}
	store, err := r.openServed(ctx, rs, src.loc)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	vctx, cancel := context.WithTimeout(ctx, snapshot.DefaultTimeout(src.expect.Size))
	defer cancel()
	start := r.now()
	got, err := restoreseed.Fetch(vctx, store, src.loc.Key, src.expect, io.Discard)
	if err != nil {
		return nil, &fetchError{err}
	}
	c := &checked{src: src, got: got, took: r.now().Sub(start)}
	if at := rs.Spec.PointInTime; at != nil {
		if c.point, err = restoreboot.ResolvePoint(vctx, store, src.loc.Key, src.revision, at); err != nil {
			return nil, &fetchError{err}
		}
	}
	return c, nil
}

// AnnotationBackupSource is where the previous release pinned the verified backup (an encoded
// storage.Location). It is only read, for a restore that release verified and this one
// finishes; status.source replaced it.
const AnnotationBackupSource = "etcd.database.coreos.com/backup-source"

// pin records the verified backup src in rs.Status.Source (written with the pass's status
// patch, with the figures it is pinned by).
func pin(rs *etcdv1beta2.EtcdRestore, src *source) {
	rs.Status.Source = restoreSource(rs, src)
}

// pinned returns the verified backup rs restores (status.source, or the previous release's
// annotation).
func pinned(rs *etcdv1beta2.EtcdRestore) (*source, error) {
	if s := rs.Status.Source; s != nil {
		loc, err := storage.FromSource(s.StorageType, s.BackupSource)
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "status.source: %v", err)
		}
		return &source{loc: loc}, nil
	}
	raw, ok := rs.Annotations[AnnotationBackupSource]
	if !ok {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "status.source is not set: the verified backup is unknown")
	}
	loc, err := storage.Decode(raw)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "annotation %s: %v", AnnotationBackupSource, err)
	}
	return &source{loc: loc}, nil
}
