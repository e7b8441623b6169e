package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// reasonSeedReady is Seeded's reason once the restored members run on the backup's data.
const reasonSeedReady = "SeedRunning"

// seed makes sure the cluster exists with rs's restore bootstrap, whose source is the verified
// backup; the etcd operator builds every member from it at once and verifies them (its
// Restored condition). seed waits for that and records what the members restored: the
// keyspace hash and key count at the restored revision, the reference the members are checked
// against once the cluster is Available. It creates no pod and deletes none.
func (r *Reconciler) seed(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	c, err := r.ensureCluster(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	b := c.Spec.Bootstrap.Restore
	if rs.Status.SeedMember == "" {
		rs.Status.SeedMember = b.SeedMember
	}
	if b.Source == nil {
		// Made by the previous release's restore operator, which created its members' pods
		// itself; they restore the backup and the etcd operator forms the cluster from them.
		if c.Status.ClusterID == "" {
			r.progress(rs, etcdv1beta2.RestorePhaseSeeding, fmt.Sprintf("waiting for the members the previous release created (%s) to form EtcdCluster %s", b.SeedMember, c.Name))
			return ctrl.Result{RequeueAfter: requeueWait}, nil
		}
		return r.checkSeed(ctx, rs, c, b.SeedMember)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
	switch {
	case cond == nil || (cond.Status != metav1.ConditionTrue && cond.Reason == etcdv1beta2.ReasonRestoring):
		msg := "the etcd operator builds every member of EtcdCluster " + c.Name + " from the backup"
		if cond != nil {
			msg += ": " + cond.Message
		}
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, msg)
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	case cond.Status != metav1.ConditionTrue:
		return ctrl.Result{}, reason.Errorf(cond.Reason, "EtcdCluster %s was not restored: %s", c.Name, cond.Message)
	}
	st := c.Status.Restore
	if st == nil {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "EtcdCluster %s says Restored but records no figures in status.restore", c.Name)
	}
	if st.BackupRevision > 0 && rs.Status.BackupRevision > st.BackupRevision {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "the backup recorded revision %d but the restored snapshot ends at revision %d", rs.Status.BackupRevision, st.BackupRevision)
	}
	if st.BackupRevision > 0 {
		rs.Status.BackupRevision = st.BackupRevision
	}
	if rs.Status.Verification == nil {
		rs.Status.Verification = &etcdv1beta2.RestoreVerification{}
	}
	v := rs.Status.Verification
	if v.SnapshotHash != 0 && v.Revision == st.Revision && v.SnapshotHash != st.Hash {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "the members of EtcdCluster %s serve keyspace hash %d at revision %d, but the restore check computed %d from the same backup", c.Name, st.Hash, st.Revision, v.SnapshotHash)
	}
	v.Revision, v.Hash, v.Keys = st.Revision, st.Hash, st.Keys
	if v.SnapshotHash == 0 {
		v.SnapshotHash = st.Hash
	}
	return r.seeded(rs, fmt.Sprintf("the etcd operator restored %d members of EtcdCluster %s: %d keys at revision %d, keyspace hash %d", st.MembersVerified, c.Name, v.Keys, v.Revision, v.Hash))
}

// seeded records that the restored members run on the backup's data.
func (r *Reconciler) seeded(rs *etcdv1beta2.EtcdRestore, msg string) (ctrl.Result, error) {
	r.setCondition(rs, etcdv1beta2.RestoreConditionSeeded, metav1.ConditionTrue, reasonSeedReady, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "Seeded", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseGrowing, "waiting for every member to be ready")
	// The cluster may well be Available already (the etcd operator verified it in the pass
	// that formed it): look at once.
	return ctrl.Result{RequeueAfter: requeueNow}, nil
}

// checkSeed reads the running seed's keyspace hash and key count at the backup's revision: the
// reference of a cluster seeded by the previous release, whose members report nothing here.
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
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "seed member %s serves keyspace hash %d at revision %d, but the restore check computed %d from the same backup", name, v.Hash, v.Revision, v.SnapshotHash)
	}
	return r.seeded(rs, fmt.Sprintf("seed member %s runs on the restored data: %d keys at revision %d, keyspace hash %d", name, v.Keys, v.Revision, v.Hash))
}
