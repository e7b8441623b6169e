package etcdrestore

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// seed makes sure the cluster exists and creates the pods of every member restored at once
// (bootstrap.restore.members): each fetches and verifies the backup and restores it with the
// shared initial cluster, so the cluster forms with every member holding the data. It waits
// until a member runs on the restored data, then records that member's keyspace hash, the
// reference every member is checked against later. A pod at a member's name that this restore
// did not create is never taken for one of its members.
func (r *Reconciler) seed(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	c, err := r.ensureCluster(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	names := bootstrapMembers(c)
	if rs.Status.SeedMember == "" {
		rs.Status.SeedMember = names[0]
	}
	ms, err := r.restoringMembers(ctx, rs, c, true)
	if err != nil {
		return ctrl.Result{}, err
	}
	if created := ms.Created(); len(created) > 0 {
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, fmt.Sprintf("member pods %s are fetching, verifying and restoring the backup", strings.Join(created, ", ")))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err := r.stopFailed(ctx, rs, c, ms); err != nil {
		return ctrl.Result{}, err
	}
	ref := ms.Reference()
	if ref == nil {
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, ms.Describe())
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	rs.Status.SeedMember = ref.Name
	if res := ref.Res; res != nil && res.Revision > 0 {
		if rs.Status.BackupRevision > res.SnapshotRevision() {
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "the backup recorded revision %d but the restored snapshot ends at revision %d", rs.Status.BackupRevision, res.SnapshotRevision())
		}
		rs.Status.BackupRevision = res.SnapshotRevision()
		if rs.Status.Verification == nil {
			rs.Status.Verification = &etcdv1beta2.RestoreVerification{}
		}
		if v := rs.Status.Verification; v.SnapshotHash != 0 && v.Revision == res.Revision && v.SnapshotHash != int64(res.HashKV) {
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "member %s restored keyspace hash %d at revision %d, but the restore check computed %d from the same backup", ref.Name, res.HashKV, res.Revision, v.SnapshotHash)
		}
		rs.Status.Verification.Revision = res.Revision
		rs.Status.Verification.SnapshotHash = int64(res.HashKV)
	}
	if _, err := ms.SameSnapshot(); err != nil {
		return ctrl.Result{}, err
	}
	return r.checkSeed(ctx, rs, c, ref.Name)
}

// checkSeed reads the running seed's keyspace hash and key count at the backup's revision.
func (r *Reconciler) checkSeed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string) (ctrl.Result, error) {
	access, err := r.clientAccess(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rs.Status.Verification == nil {
		rs.Status.Verification = &etcdv1beta2.RestoreVerification{}
	}
	v := rs.Status.Verification
	rev := v.Revision
	if rev == 0 {
		// The restore step could not tell the revision offline: a snapshot of an empty
		// keyspace holds no key revision (etcdutl snapshot status says 0), and an etcdutl
		// without hashkv cannot read it from the data. The seed, alone in its cluster, says.
		st, err := r.checkAt(ctx, c, name, access, 0)
		if err != nil {
			r.progress(rs, etcdv1beta2.RestorePhaseSeeding, fmt.Sprintf("seed member %s does not answer yet: %v", name, err))
			return ctrl.Result{RequeueAfter: requeueStep}, nil
		}
		if st.Revision < rs.Status.BackupRevision {
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "seed member %s is at revision %d, below the backup's %d", name, st.Revision, rs.Status.BackupRevision)
		}
		rev = st.Revision
	}
	st, err := r.checkAt(ctx, c, name, access, rev)
	if err != nil {
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, fmt.Sprintf("seed member %s does not answer yet: %v", name, err))
		return ctrl.Result{RequeueAfter: requeueStep}, nil
	}
	v.Revision, v.Hash, v.Keys = rev, int64(st.Hash), st.Keys
	if v.SnapshotHash != 0 && v.SnapshotHash != v.Hash {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "seed member %s serves keyspace hash %d at revision %d, but etcdutl computed %d from the restored data", name, v.Hash, v.Revision, v.SnapshotHash)
	}
	msg := fmt.Sprintf("seed member %s runs on the restored data: %d keys at revision %d, keyspace hash %d", name, v.Keys, v.Revision, v.Hash)
	r.setCondition(rs, etcdv1beta2.RestoreConditionSeeded, metav1.ConditionTrue, reasonSeedReady, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "Seeded", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseGrowing, "waiting for every member to run on the restored data and the etcd operator to take the cluster over")
	return ctrl.Result{RequeueAfter: requeueStep}, nil
}

// createSeed creates the seed member's volume (if the cluster uses volumes) and pod, controlled
// by c. An object already at the seed's name is fine only if it is this restore's seed.
func (r *Reconciler) createSeed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string, names []string) error {
	if r.AgentImage == "" {
		return reason.Errorf(etcdv1beta2.ReasonSeedFailed, "the restore operator does not know the image of its seed agent: run it with --seed-agent-image, or with POD_NAME and POD_NAMESPACE set from the downward API")
	}
	src, err := pinned(rs)
	if err != nil {
		return err
	}
	if pvc := seedPVC(rs, c, name); pvc != nil {
		if err := r.createOwn(ctx, rs, c, pvc, &corev1.PersistentVolumeClaim{}, "volume"); err != nil {
			return err
		}
	}
	if err := r.createOwn(ctx, rs, c, r.seedPod(rs, c, name, names, src), &corev1.Pod{}, "pod"); err != nil {
		return err
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, "SeedCreated", "Created member %s to restore %s into (initial cluster %s)", name, rs.Status.BackupLocation, strings.Join(names, ", "))
	return nil
}

// createOwn creates obj; if something already stands at its name, it must be rs's seed (read
// live into existing), or the restore fails with SeedConflict.
func (r *Reconciler) createOwn(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, obj, existing client.Object, kind string) error {
	err := r.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating seed %s %s: %w", kind, obj.GetName(), err)
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("getting seed %s %s: %w", kind, obj.GetName(), err)
	}
	if !seedOf(existing, rs, c) {
		return seedConflict(kind, existing)
	}
	return nil
}

// seedConflict is the failure for an object at the seed's name that this restore did not create.
func seedConflict(kind string, obj metav1.Object) error {
	return reason.Errorf(etcdv1beta2.ReasonSeedConflict, "a %s named %s already stands at the seed member's name, and this restore did not create it (%s): it is not the seed, and nothing was deleted", kind, obj.GetName(), describeOwner(obj))
}

// stopSeed deletes pod, the seed rs created for c, so the kubelet stops retrying it: only after
// checking it is that seed, and with a UID precondition.
func (r *Reconciler) stopSeed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, pod *corev1.Pod) error {
	if !seedOf(pod, rs, c) || pod.DeletionTimestamp != nil {
		return nil
	}
	uid := pod.UID
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting seed pod %s: %w", pod.Name, err)
	}
	return nil
}

// stopOwnSeed stops the pods of rs's members when the restore gives up (its deadline passed)
// before they formed a cluster, so the kubelet does not retry them forever. Once they formed
// one (ms.formed), it may serve writes (the etcd operator forms and serves it whether or not
// this restore recorded Seeded in time): nothing is stopped, and the returned note says so.
func (r *Reconciler) stopOwnSeed(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (string, error) {
	if rs.Status.SeedMember == "" || isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionSeeded) {
		return "", nil
	}
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if !ours(c, rs) {
		return "", nil
	}
	ms, err := r.restoringMembers(ctx, rs, c, false)
	if err != nil {
		return "", err
	}
	if formed(c, ms) {
		return fmt.Sprintf(". EtcdCluster %s formed on the restored data (members %s run etcd on it) and may serve writes: it is left running as it is, unverified against the backup", c.Name, strings.Join(ms.Started(), ", ")), nil
	}
	return "", r.stopAll(ctx, rs, c, ms)
}
