package etcdrestore

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// reasonBackupVerified is the BackupVerified condition's reason when it is True.
const reasonBackupVerified = "ChecksumsMatched"

// verifyBackup finds the backup and reads it whole, checking etcd's trailing checksum and the
// size and sha256 the backup recorded, before any cluster is touched. A bad backup fails the
// restore here, with the existing cluster exactly as it was.
func (r *Reconciler) verifyBackup(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	src, err := r.resolve(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	store, err := r.open(ctx, rs, src.loc)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer store.Close()
	vctx, cancel := context.WithTimeout(ctx, snapshot.DefaultTimeout(src.expect.Size))
	defer cancel()
	start := r.now()
	got, err := restoreseed.Fetch(vctx, store, src.loc.Key, src.expect, io.Discard)
	if err != nil {
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
	if err := r.pin(ctx, rs, src); err != nil {
		return ctrl.Result{}, err
	}
	rs.Status.BackupLocation = src.loc.URL()
	rs.Status.BackupSize = got.Size
	rs.Status.BackupSHA256 = got.SHA256
	rs.Status.BackupRevision = src.revision
	if src.taken != nil {
		rs.Status.BackupTime = src.taken.DeepCopy()
		rs.Status.BackupAge = &metav1.Duration{Duration: rs.Status.StartTime.Sub(src.taken.Time).Round(time.Second)}
	}
	msg := fmt.Sprintf("%s: %d bytes, sha256 %s, etcd checksum valid (read in %s)", src.loc.URL(), got.Size, got.SHA256, r.now().Sub(start).Round(time.Millisecond))
	r.setCondition(rs, etcdv1beta2.RestoreConditionBackupVerified, metav1.ConditionTrue, reasonBackupVerified, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "BackupVerified", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "backup verified; preparing the cluster")
	return ctrl.Result{RequeueAfter: requeueNow}, nil
}

// AnnotationBackupSource holds, once the backup verified, the storage.Location that reaches it
// (type, bucket, exact key, endpoint, Secrets): the seed uses exactly the object that was
// verified, even if the EtcdBackup or schedule that named it is gone by then.
const AnnotationBackupSource = "etcd.database.coreos.com/backup-source"

// pin saves src on rs.
func (r *Reconciler) pin(ctx context.Context, rs *etcdv1beta2.EtcdRestore, src *source) error {
	raw := src.loc.Encode()
	if rs.Annotations[AnnotationBackupSource] == raw {
		return nil
	}
	patch := rs.DeepCopy()
	if patch.Annotations == nil {
		patch.Annotations = map[string]string{}
	}
	patch.Annotations[AnnotationBackupSource] = raw
	if err := r.Patch(ctx, patch, client.MergeFrom(rs)); err != nil {
		return fmt.Errorf("saving the backup source: %w", err)
	}
	rs.Annotations, rs.ResourceVersion = patch.Annotations, patch.ResourceVersion
	return nil
}

// pinned returns the source pin saved.
func pinned(rs *etcdv1beta2.EtcdRestore) (*source, error) {
	raw, ok := rs.Annotations[AnnotationBackupSource]
	if !ok {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "annotation %s is missing: the verified backup is unknown", AnnotationBackupSource)
	}
	loc, err := storage.Decode(raw)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "annotation %s: %v", AnnotationBackupSource, err)
	}
	return &source{loc: loc}, nil
}
