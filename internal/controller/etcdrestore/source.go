package etcdrestore

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// source is a resolved backup: where it is, how to reach it, and what it must match.
type source struct {
	// spec is a one-shot backup spec naming the object (path <bucket>/<key>): the storage type,
	// endpoint and credentials Secret to reach it.
	spec   etcdv1beta2.BackupSpec
	bucket string
	key    string
	// expect is what the backup recorded about the object; zero fields are unknown.
	expect restoreseed.Expect
	// revision is the revision the backup recorded (0: unknown).
	revision int64
	// taken is when the backup was taken, if known.
	taken *metav1.Time
}

// location renders where the backup is, as the backup operator does.
func (s *source) location() string {
	return fmt.Sprintf("%s://%s/%s", s.spec.StorageType, s.bucket, s.key)
}

// secretName is the credentials Secret of the storage block.
func (s *source) secretName() string {
	switch {
	case s.spec.S3 != nil:
		return s.spec.S3.AWSSecret
	case s.spec.ABS != nil:
		return s.spec.ABS.ABSSecret
	case s.spec.GCS != nil:
		return s.spec.GCS.GCPSecret
	}
	return ""
}

// endpoint and forcePathStyle of the storage block.
func (s *source) endpoint() (string, bool) {
	switch {
	case s.spec.S3 != nil:
		return s.spec.S3.Endpoint, s.spec.S3.ForcePathStyle
	case s.spec.ABS != nil:
		return s.spec.ABS.Endpoint, false
	case s.spec.GCS != nil:
		return s.spec.GCS.Endpoint, false
	}
	return "", false
}

// withPath returns a copy of src whose storage block's path is path.
func withPath(typ etcdv1beta2.BackupStorageType, src etcdv1beta2.BackupSource, path string) etcdv1beta2.BackupSpec {
	spec := etcdv1beta2.BackupSpec{StorageType: typ, BackupSource: *src.DeepCopy()}
	switch {
	case spec.S3 != nil:
		spec.S3.Path = path
	case spec.ABS != nil:
		spec.ABS.Path = path
	case spec.GCS != nil:
		spec.GCS.Path = path
	}
	return spec
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
				return nil, failure(etcdv1beta2.ReasonBackupNotFound, "EtcdBackupSchedule %s/%s not found", rs.Namespace, rs.Spec.BackupScheduleRef.Name)
			}
			return nil, fmt.Errorf("getting EtcdBackupSchedule %s: %w", rs.Spec.BackupScheduleRef.Name, err)
		}
		if name := s.Status.LastSuccessfulBackup; name != "" {
			if src, err := r.fromBackup(ctx, rs.Namespace, name); err == nil {
				return src, nil
			}
		}
		if s.Status.LastSuccessfulLocation == "" {
			return nil, failure(etcdv1beta2.ReasonNoSuccessfulBackup, "EtcdBackupSchedule %s has no successful backup yet", s.Name)
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
			return nil, failure(etcdv1beta2.ReasonBackupNotFound, "EtcdBackup %s/%s not found", ns, name)
		}
		return nil, fmt.Errorf("getting EtcdBackup %s: %w", name, err)
	}
	switch {
	case b.Status.Succeeded && b.Status.Location != "":
	case isTrue(b.Status.Conditions, etcdv1beta2.BackupConditionFailed):
		return nil, failure(etcdv1beta2.ReasonBackupNotFound, "EtcdBackup %s failed (%s): there is nothing to restore", name, b.Status.Reason)
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

// fromLocation resolves a location the backup operator recorded.
func fromLocation(typ etcdv1beta2.BackupStorageType, block etcdv1beta2.BackupSource, loc string) (*source, error) {
	ltyp, bucket, key, ok := etcdbackup.ParseLocation(loc)
	if !ok || ltyp != typ {
		return nil, failure(etcdv1beta2.ReasonBackupNotFound, "backup location %q is not a %s object location", loc, typ)
	}
	return &source{spec: withPath(typ, block, bucket+"/"+key), bucket: bucket, key: key}, nil
}

// fromBlock resolves the coreos form: backupStorageType with its s3/abs/gcs block, the path
// naming the object (Exact) or a prefix whose newest backup is restored (Newest).
func (r *Reconciler) fromBlock(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (*source, error) {
	spec := etcdv1beta2.BackupSpec{StorageType: rs.Spec.BackupStorageType, BackupSource: *rs.Spec.BackupSource.DeepCopy()}
	bucket, key, err := factory.SplitPath(spec.StoragePath())
	if err != nil {
		return nil, failure(etcdv1beta2.ReasonInvalidSpec, "storage path: %v", err)
	}
	src := &source{spec: spec, bucket: bucket, key: key}
	if rs.Spec.BackupSelection != etcdv1beta2.BackupSelectionNewest {
		if info, ok := keyInfo(key); ok { // a periodic or scheduled backup's key says when
			src.taken = &metav1.Time{Time: info.Time}
		}
		return src, nil
	}
	store, err := etcdbackup.OpenStore(ctx, r.Client, rs.Namespace, &spec)
	if err != nil {
		return nil, storeFailure(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	objs, err := store.List(ctx, key)
	if err != nil {
		return nil, &reasonError{reason: etcdv1beta2.ReasonStorageUnreachable, transient: true, err: fmt.Errorf("listing backups under %s: %w", src.location(), err)}
	}
	b, err := newestOf(rs, key, src.location(), objs, r.now())
	if err != nil {
		return nil, err
	}
	src.key = b.Key
	src.spec = withPath(rs.Spec.BackupStorageType, rs.Spec.BackupSource, bucket+"/"+src.key)
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
func newestOf(rs *etcdv1beta2.EtcdRestore, prefix, where string, objs []backend.ObjectInfo, now time.Time) (retention.Backup, error) {
	names := []string{rs.Spec.EtcdCluster.Name}
	if t := rs.Spec.ClusterTemplate; t != nil {
		names = append(names, t.Name)
	}
	var others []snapshot.Identity
	for _, name := range names {
		b, found, ok := retention.Newest(prefix, objs, now, func(id snapshot.Identity) bool {
			return id.Namespace == rs.Namespace && id.Cluster == name
		})
		if ok {
			return b, nil
		}
		others = found
	}
	if len(others) == 0 {
		return retention.Backup{}, failure(etcdv1beta2.ReasonNoSuccessfulBackup, "no backup written by this project under %s", where)
	}
	found := make([]string, 0, len(others))
	for _, id := range others {
		found = append(found, id.Describe())
	}
	return retention.Backup{}, failure(etcdv1beta2.ReasonNoSuccessfulBackup,
		"no backup of EtcdCluster %s/%s under %s: the backups there are of other clusters: %s (backups without a cluster identity are not used while other clusters' backups share the prefix); name the object with backupSelection Exact to restore one of them",
		rs.Namespace, strings.Join(names, " or "), where, strings.Join(found, ", "))
}

// keyInfo parses a key written by snapshot.ClusterKey or snapshot.ObjectKey under any prefix.
func keyInfo(key string) (snapshot.KeyInfo, bool) {
	_, info, ok := snapshot.SplitKey(key)
	return info, ok
}

// storeFailure turns an OpenStore error into a restore failure with its reason.
func storeFailure(err error) error {
	reason := etcdbackup.ErrorReason(err)
	if reason == "" {
		return err
	}
	return &reasonError{reason: reason, err: err}
}
