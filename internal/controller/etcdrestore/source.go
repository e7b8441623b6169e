package etcdrestore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// source is a resolved backup: where it is, how to reach it, and what it must match.
type source struct {
	// loc is the backup object and how to reach it.
	loc storage.Location
	// expect is what the backup recorded about the object; zero fields are unknown.
	expect restoreseed.Expect
	// revision is the revision the backup recorded (0: unknown).
	revision int64
	// taken is when the backup was taken, if known.
	taken *metav1.Time
}

// errWait means the backup is not ready yet (a referenced EtcdBackup still runs).
type errWait struct{ msg string }

func (e errWait) Error() string { return e.msg }

// resolve finds the backup rs names. It runs until the backup verified; then the choice is
// pinned on rs (see pin) and never re-evaluated.
func (r *Reconciler) resolve(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*source, error) {
	switch {
	case rs.Spec.BackupRef != nil:
		return r.fromBackup(ctx, rs.Namespace, rs.Spec.BackupRef.Name)
	case rs.Spec.BackupScheduleRef != nil:
		s := &etcdv1beta2.EtcdBackupSchedule{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.BackupScheduleRef.Name}, s); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "EtcdBackupSchedule %s/%s not found", rs.Namespace, rs.Spec.BackupScheduleRef.Name)
			}
			return nil, fmt.Errorf("getting EtcdBackupSchedule %s: %w", rs.Spec.BackupScheduleRef.Name, err)
		}
		if name := s.Status.LastSuccessfulBackup; name != "" {
			if src, err := r.fromBackup(ctx, rs.Namespace, name); err == nil {
				return src, nil
			}
		}
		if s.Status.LastSuccessfulLocation == "" {
			return nil, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "EtcdBackupSchedule %s has no successful backup yet", s.Name)
		}
		// The EtcdBackup object is gone (history limits): the recorded location and the
		// schedule's template still say how to reach the object.
		return fromLocation(s.Spec.BackupTemplate.Spec.StorageType, s.Spec.BackupTemplate.Spec.BackupSource, s.Status.LastSuccessfulLocation)
	default:
		return r.fromBlock(ctx, rs)
	}
}

// fromBackup resolves a successful EtcdBackup.
func (r *Reconciler) fromBackup(ctx context.Context, ns, name string) (*source, error) {
	b := &etcdv1beta2.EtcdBackup{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "EtcdBackup %s/%s not found", ns, name)
		}
		return nil, fmt.Errorf("getting EtcdBackup %s: %w", name, err)
	}
	switch {
	case b.Status.Succeeded && b.Status.Location != "":
	case isTrue(b.Status.Conditions, etcdv1beta2.BackupConditionFailed):
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupNotFound, "EtcdBackup %s failed (%s): there is nothing to restore", name, b.Status.Reason)
	default:
		return nil, errWait{"waiting for EtcdBackup " + name + " to complete"}
	}
	src, err := fromLocation(b.Spec.StorageType, b.Spec.BackupSource, b.Status.Location)
	if err != nil {
		return nil, err
	}
	src.expect = restoreseed.Expect{Size: b.Status.Size, SHA256: b.Status.SHA256}
	src.revision = b.Status.EtcdRevision
	src.taken = b.Status.CompletionTime
	if src.taken == nil {
		src.taken = b.Status.LastSuccessDate
	}
	return src, nil
}

// fromLocation resolves a location the backup operator recorded (url) in the store of the
// storage block that wrote it.
func fromLocation(typ etcdv1beta2.BackupStorageType, block etcdv1beta2.BackupSource, url string) (*source, error) {
	base, err := storage.FromSource(typ, block)
	if err != nil {
		return nil, err
	}
	loc, err := base.At(url)
	if err != nil {
		return nil, err
	}
	return &source{loc: loc}, nil
}

// fromBlock resolves the coreos form: backupStorageType with its s3/abs/gcs/oss block, the path
// naming the object (Exact) or a prefix whose newest backup is restored (Newest).
func (r *Reconciler) fromBlock(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*source, error) {
	loc, err := storage.FromSource(rs.Spec.BackupStorageType, rs.Spec.BackupSource)
	if err != nil {
		return nil, err
	}
	src := &source{loc: loc}
	if rs.Spec.BackupSelection != etcdv1beta2.BackupSelectionNewest {
		if info, ok := keyInfo(loc.Key); ok { // a periodic or scheduled backup's key says when
			src.taken = &metav1.Time{Time: info.Time}
		}
		return src, nil
	}
	store, err := r.openServed(ctx, rs, loc)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	objs, err := store.List(ctx, loc.Key)
	if err != nil {
		return nil, reason.Transient(etcdv1beta2.ReasonStorageUnreachable, fmt.Errorf("listing backups under %s: %w", loc.URL(), err))
	}
	b, err := newestOf(rs, loc.Key, loc.URL(), r.Options.KubeID, objs, r.now())
	if err != nil {
		return nil, err
	}
	src.loc = loc.WithKey(b.Key)
	src.revision = b.Revision
	src.taken = &metav1.Time{Time: b.Time}
	return src, nil
}

// newestOf picks the backup a Newest restore of rs restores among objs, the listing of prefix
// (at where): the newest backup of the cluster rs restores (its namespace and
// etcdCluster name, any cluster ID: a restored cluster has a new one), or when there is none
// and rs is a restore into a scratch cluster, of its clusterTemplate; else, only when no other
// cluster's backup is under the prefix, the newest legacy backup (written before keys named
// their cluster). Never another cluster's backup.
//
// kube is the Kubernetes cluster the operator runs in: the cluster's backups written there are
// chosen first, else those of the one other Kubernetes cluster that wrote its backups; two or
// more such Kubernetes clusters are refused (retention.PreferKube).
func newestOf(rs *etcdv1beta2.EtcdRestore, prefix, where, kube string, objs []backend.ObjectInfo, now time.Time) (retention.Backup, error) {
	names := []string{rs.Spec.EtcdCluster.Name}
	if t := rs.Spec.ClusterTemplate; t != nil {
		names = append(names, t.Name)
	}
	if at := rs.Spec.PointInTime; at != nil {
		// Only backups from before the point: the capture after one brings it there.
		objs = slices.DeleteFunc(slices.Clone(objs), func(o backend.ObjectInfo) bool {
			info, ok := keyInfo(o.Key)
			return ok && !restoreboot.TakenBefore(info, at)
		})
	}
	var others []snapshot.Identity
	for _, name := range names {
		b, found, kubes, ok := retention.Newest(prefix, objs, now, kube, func(id snapshot.Identity) bool {
			return id.Namespace == rs.Namespace && id.Cluster == name
		})
		if ok {
			return b, nil
		}
		if len(kubes) > 0 {
			return retention.Backup{}, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup,
				"the backups of EtcdCluster %s/%s under %s were written in %d other Kubernetes clusters (%s) and none in this one: which is meant cannot be told; name the object with backupSelection Exact",
				rs.Namespace, name, where, len(kubes), strings.Join(kubes, ", "))
		}
		others = found
	}
	if len(others) == 0 {
		return retention.Backup{}, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup, "no backup written by this project under %s", where)
	}
	found := make([]string, 0, len(others))
	for _, id := range others {
		found = append(found, id.Describe())
	}
	return retention.Backup{}, reason.Errorf(etcdv1beta2.ReasonNoSuccessfulBackup,
		"no backup of EtcdCluster %s/%s under %s: the backups there are of other clusters: %s (backups without a cluster identity are not used while other clusters' backups share the prefix); name the object with backupSelection Exact to restore one of them",
		rs.Namespace, strings.Join(names, " or "), where, strings.Join(found, ", "))
}

// keyInfo parses a key written by snapshot.ClusterKey or snapshot.ObjectKey under any prefix.
func keyInfo(key string) (snapshot.KeyInfo, bool) {
	_, info, ok := snapshot.SplitKey(key)
	return info, ok
}

// listTimeout bounds the listing of a prefix for its newest backup.
const listTimeout = time.Minute

// open opens the store of loc with Secrets from rs's namespace.
func (r *Reconciler) open(ctx context.Context, rs *etcdv1beta2.EtcdRestore, loc storage.Location) (*storage.Store, error) {
	return storage.Open(ctx, loc, storage.APISecrets{Reader: r.Client, Namespace: rs.Namespace}, r.Options.Ambient)
}

// openServed is open for the reads in the worker pool (resolve, readBackup): a claim's server
// that is still starting is waited for (storage.OpenServed).
func (r *Reconciler) openServed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, loc storage.Location) (*storage.Store, error) {
	return storage.OpenServed(ctx, loc, storage.APISecrets{Reader: r.Client, Namespace: rs.Namespace}, r.Options.Ambient, storage.ServerWait)
}
