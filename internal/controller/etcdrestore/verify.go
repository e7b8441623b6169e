package etcdrestore

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// reasonBackupVerified is the BackupVerified condition's reason when it is True.
const reasonBackupVerified = "ChecksumsMatched"

// verifyBackup finds the backup and reads it whole, checking etcd's trailing checksum and the
// size and sha256 the backup recorded, before any cluster is touched. A bad backup fails the
// restore here, with the existing cluster exactly as it was.
func (r *Reconciler) verifyBackup(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	src, err := r.resolve(ctx, rs, "")
	if err != nil {
		return ctrl.Result{}, err
	}
	store, err := etcdbackup.OpenStore(ctx, r.Client, rs.Namespace, &src.spec)
	if err != nil {
		return ctrl.Result{}, storeFailure(err)
	}
	defer store.Close()
	vctx, cancel := context.WithTimeout(ctx, snapshot.DefaultTimeout(src.expect.Size))
	defer cancel()
	start := r.now()
	got, err := restoreseed.Fetch(vctx, store, src.key, src.expect, io.Discard)
	if err != nil {
		switch reason := restoreseed.Reason(err, ""); reason {
		case "":
			return ctrl.Result{}, err
		case etcdv1beta2.ReasonStorageUnreachable:
			return ctrl.Result{}, &reasonError{reason: reason, transient: true, err: err}
		default:
			r.setCondition(rs, etcdv1beta2.RestoreConditionBackupVerified, metav1.ConditionFalse, reason, err.Error())
			return ctrl.Result{}, &reasonError{reason: reason, err: fmt.Errorf("%w; no cluster was changed", err)}
		}
	}
	rs.Status.BackupLocation = src.location()
	rs.Status.BackupSize = got.Size
	rs.Status.BackupSHA256 = got.SHA256
	rs.Status.BackupRevision = src.revision
	if src.taken != nil {
		rs.Status.BackupTime = src.taken.DeepCopy()
		rs.Status.BackupAge = &metav1.Duration{Duration: rs.Status.StartTime.Sub(src.taken.Time).Round(time.Second)}
	}
	msg := fmt.Sprintf("%s: %d bytes, sha256 %s, etcd checksum valid (read in %s)", src.location(), got.Size, got.SHA256, r.now().Sub(start).Round(time.Millisecond))
	r.setCondition(rs, etcdv1beta2.RestoreConditionBackupVerified, metav1.ConditionTrue, reasonBackupVerified, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "BackupVerified", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "backup verified; preparing the cluster")
	return ctrl.Result{RequeueAfter: time.Millisecond}, nil
}
