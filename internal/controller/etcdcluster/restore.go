package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// A cluster with bootstrap.restore.source is built from that backup by this operator alone
// (internal/restoreboot): cluster.Next creates the pod of every restored member at once
// (ActionRestoreMembers), each restores the backup before etcd starts, the members form the
// cluster and its ID is recorded as for any restored cluster; then every member is checked
// against what the restore reported (keyspace hash and key count at the restored revision) and
// Restored is set. The cluster is Available only after that. The phase, one straight path:
//
//	reconcileRestore -> (not formed) restoreProgress: a member that failed for good stops
//	                    every restored member's pod, Restored=False, nothing is retried
//	                 -> (formed) verifyRestore: every member against the report, Restored=True

// restoring reports whether c is built from bootstrap.restore.source and not verified yet.
func restoring(c *etcdv1beta2.EtcdCluster) bool {
	b := c.Spec.Bootstrap
	return b != nil && b.Restore != nil && b.Restore.Source != nil &&
		!meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
}

// restoreFailed reports whether c's restore from its source failed for good: nothing is
// created again (the source is immutable; a new cluster is the retry).
// A Newest source that has not chosen its backup yet has not failed: its choice is retried.
func restoreFailed(c *etcdv1beta2.EtcdCluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != etcdv1beta2.ReasonRestoring && !choosing(c)
}

// restoreNames are the members restored at once: those recorded when their pods were first
// created, else bootstrap.restore.members, else <name>-0 to <name>-<size-1>.
func restoreNames(c *etcdv1beta2.EtcdCluster) []string {
	if st := c.Status.Restore; st != nil && len(st.Members) > 0 {
		return st.Members
	}
	b := c.Spec.Bootstrap.Restore
	if len(b.Members) > 0 {
		return b.Members
	}
	names := make([]string, max(c.Spec.Size, 1))
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", c.Name, i)
	}
	return names
}

// restoreLive are the restored members whose restore has not failed (restoreNames without
// status.restore.failedMembers): those the cluster forms from.
func restoreLive(c *etcdv1beta2.EtcdCluster) []string {
	names := restoreNames(c)
	if st := c.Status.Restore; st != nil && len(st.FailedMembers) > 0 {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(st.FailedMembers, n) })
	}
	return names
}

// restoreSeed is the member the others are checked against.
func restoreSeed(c *etcdv1beta2.EtcdCluster) string {
	live := restoreLive(c)
	if s := c.Spec.Bootstrap.Restore.SeedMember; s != "" && (slices.Contains(live, s) || len(live) == 0) {
		return s
	}
	if len(live) == 0 {
		return restoreNames(c)[0]
	}
	return live[0]
}

// setRestored sets the Restored condition.
func setRestored(c *etcdv1beta2.EtcdCluster, ok bool, why, msg string) {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1beta2.ClusterConditionRestored, Status: st,
		Reason: why, Message: msg, ObservedGeneration: c.Generation})
}

// createRestoreMembers creates the volume (with volumes) and the pod of every restored member
// that has none, all at once, each restoring the backup with the full initial cluster. A
// Newest source first chooses its backup (selectBackup); created is false until members are.
func (r *Reconciler) createRestoreMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) (created bool, err error) {
	if r.AgentImage == "" {
		return false, reason.Errorf(etcdv1beta2.ReasonSeedFailed, "the etcd operator does not know the image of the restore agent: run it with --seed-agent-image, or with POD_NAME and POD_NAMESPACE set from the downward API")
	}
	// Read around the cache: a pass on a copy that missed the last status patch must not
	// restore a member again whose restore failed (status.restore.failedMembers), nor restore
	// into a cluster that formed or failed meanwhile, nor choose a Newest source's backup again.
	live := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil {
		return false, fmt.Errorf("reading %s before restoring members: %w", klog.KObj(c), err)
	}
	if live.UID != c.UID || live.Status.ClusterID != "" || restoreFailed(live) {
		return false, nil
	}
	if choosing(live) {
		return false, r.selectBackup(ctx, c)
	}
	src, err := restoreboot.FromCluster(live)
	if err != nil {
		setRestored(c, false, reason.Of(err), err.Error())
		return false, err
	}
	var failed []string
	if live.Status.Restore != nil {
		failed = live.Status.Restore.FailedMembers
	}
	names := restoreNames(c)
	if c.Status.Restore == nil {
		c.Status.Restore = &etcdv1beta2.ClusterRestoreStatus{}
	}
	c.Status.Restore.Members = names
	c.Status.Restore.Selected = selected(live)
	if live.Status.Restore != nil {
		c.Status.Restore.PointInTime = live.Status.Restore.PointInTime
	}
	for _, name := range names {
		if _, ok := obs.pods[name]; ok || slices.Contains(failed, name) {
			continue
		}
		if err := r.createMember(ctx, c, restoreboot.Pod(c, name, names, src, r.AgentImage)); err != nil {
			if reason.Of(err) == etcdv1beta2.ReasonMemberRefused {
				// Not a failed restore: once admitted, the members restore the same backup.
				setRestored(c, false, etcdv1beta2.ReasonRestoring, "waiting for the API server to admit the members: "+err.Error())
			}
			return false, err
		}
	}
	setRestored(c, false, etcdv1beta2.ReasonRestoring, fmt.Sprintf("members %v fetch, verify and restore %s", names, src.Loc.URL()))
	r.event(c, corev1.EventTypeNormal, "RestoringMembers", fmt.Sprintf("Created members %v, each restoring the backup %s", names, src.Loc.URL()))
	return true, nil
}

// reconcileRestore moves the restore of c (restoring(c)) along: before the cluster formed, it
// reports the members' progress and stops them all if one failed for good; once it formed, it
// verifies every member against the backup.
func (r *Reconciler) reconcileRestore(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation) error {
	if err := r.freshRestoreStatus(ctx, c); err != nil || !restoring(c) {
		return err // verified already, in a pass this cached copy has not seen
	}
	if restoreFailed(c) {
		cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
		return reason.Errorf(etcdv1beta2.ReasonRestoreFailed, "the restore from bootstrap.restore.source failed (%s): %s. bootstrap is immutable: delete this EtcdCluster and apply it again (with another source) to retry", cond.Reason, cond.Message)
	}
	if choosing(c) {
		return nil // no member exists before the backup is chosen (selectBackup reports)
	}
	names := restoreNames(c)
	if c.Status.Restore == nil {
		c.Status.Restore = &etcdv1beta2.ClusterRestoreStatus{Members: names}
	}
	ms := make(restoreboot.Members, 0, len(names))
	for _, name := range names {
		if obs.ReservedNames[name] && c.Status.ClusterID == "" {
			err := reason.Errorf(etcdv1beta2.ReasonSeedConflict, "a pod or volume named %s, which this cluster does not control, stands at the name of a member to restore: it is not taken for one, and nothing was created or deleted", name)
			setRestored(c, false, etcdv1beta2.ReasonSeedConflict, err.Error())
			return err
		}
		ms = append(ms, restoreboot.NewMember(name, obs.pods[name]))
	}
	ref, err := ms.SameSnapshot()
	if err == nil && ref != nil {
		err = recordReport(c, ref)
	}
	if err != nil {
		// Different data in different members, or not the backup the source names: nothing
		// formed on it is trusted. Before formation, stop every member.
		if c.Status.ClusterID == "" && !ms.QuorumStarted() {
			if serr := r.stopRestoreMembers(ctx, c, ms); serr != nil {
				return serr
			}
		}
		setRestored(c, false, reason.Of(err), err.Error())
		return err
	}
	if err := r.restoreProgress(ctx, c, ms); err != nil || c.Status.ClusterID == "" {
		return err
	}
	return r.verifyRestore(ctx, c, obs, ms)
}

// recordReport keeps what the members reported restoring (res): the revision the keyspace is
// verified at, which a NOSPACE compaction keeps until then. A snapshot that ends below the
// revision the source names is not that backup.
func recordReport(c *etcdv1beta2.EtcdCluster, res *restoreseed.Result) error {
	if want := restoreboot.WantRevision(c); want > 0 && res.SnapshotRevision() < want {
		return reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "bootstrap.restore.source names a backup at revision %d but the restored snapshot ends at revision %d", want, res.SnapshotRevision())
	}
	if c.Status.Restore == nil {
		c.Status.Restore = &etcdv1beta2.ClusterRestoreStatus{Members: restoreNames(c)}
	}
	c.Status.Restore.Revision, c.Status.Restore.BackupRevision, c.Status.Restore.SHA256 = res.Revision, res.SnapshotRevision(), res.SHA256
	return nil
}

// restoreProgress stops the pods of members whose restore failed for good (the kubelet would
// retry them forever). Before a quorum of members ran etcd on the restored data nothing serves
// anything: every member's pod is stopped and the restore fails. After, the members that run
// may hold writes: only the failed members' pods go, and cluster.Next replaces them from the
// others once the cluster ID is recorded.
func (r *Reconciler) restoreProgress(ctx context.Context, c *etcdv1beta2.EtcdCluster, ms restoreboot.Members) error {
	setRestored(c, false, etcdv1beta2.ReasonRestoring, ms.Describe())
	failed := ms.FirstFailed()
	if failed == nil {
		return nil
	}
	if c.Status.ClusterID != "" || ms.QuorumStarted() {
		var stop restoreboot.Members
		for _, m := range ms {
			if m.Failed() {
				stop = append(stop, m)
				if !slices.Contains(c.Status.Restore.FailedMembers, m.Name) {
					c.Status.Restore.FailedMembers = append(c.Status.Restore.FailedMembers, m.Name)
				}
				r.event(c, corev1.EventTypeWarning, m.Res.Reason, fmt.Sprintf("Member %s could not restore the backup (%s); its pod was deleted and it joins the cluster through raft from the members that run on the restored data", m.Name, m.Res.Message))
			}
		}
		return r.stopRestoreMembers(ctx, c, stop)
	}
	if err := r.stopRestoreMembers(ctx, c, ms); err != nil {
		return err
	}
	err := reason.Errorf(failed.Res.Reason, "member %s could not restore the backup: %s", failed.Name, failed.Res.Message)
	setRestored(c, false, failed.Res.Reason, err.Error())
	return err
}

// stopRestoreMembers deletes the pods of ms that c controls, each with a UID precondition.
// Their volumes stay (the cluster's, deleted with it).
func (r *Reconciler) stopRestoreMembers(ctx context.Context, c *etcdv1beta2.EtcdCluster, ms restoreboot.Members) error {
	for _, m := range ms {
		if m.Pod == nil || m.Pod.DeletionTimestamp != nil || !controlledBy(m.Pod, c) {
			continue
		}
		uid := m.Pod.UID
		if err := r.Delete(ctx, m.Pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("stopping restored member %s: %w", m.Name, err)
		}
	}
	return nil
}

// verifyRestore checks, once the restored members formed the cluster, that every one of them
// serves what the restore reported: the keyspace hash and key count at the restored revision.
// A member that does not answer yet is asked again on a later pass; a mismatch is
// VerificationFailed (the cluster stays as it is: it may hold writes).
func (r *Reconciler) verifyRestore(ctx context.Context, c *etcdv1beta2.EtcdCluster, obs *observation, ms restoreboot.Members) error {
	if !obs.Reachable {
		setRestored(c, false, etcdv1beta2.ReasonRestoring, "the restored members formed the cluster; waiting for them to answer to verify them")
		return nil
	}
	access, err := kubesecret.OperatorAccess(ctx, r.Client, c)
	if err != nil {
		return err
	}
	check := r.RestoreCheck
	if check == nil {
		check = restoreboot.CheckMember
	}
	seedName := restoreSeed(c)
	var seed *restoreboot.Member
	for _, m := range ms {
		if m.Name == seedName {
			seed = m
		}
	}
	rev, want := int64(0), restoreboot.MemberState{}
	var reported bool
	if ref, _ := ms.SameSnapshot(); ref != nil {
		rev, reported = ref.Revision, true
		want = restoreboot.MemberState{Hash: ref.HashKV, Keys: ref.Keys}
	}
	seedAddr := ""
	if seed != nil && seed.Pod != nil {
		seedAddr = seed.Pod.Status.PodIP
	}
	if !reported || want.Hash == 0 {
		// No figures from the restore step (an empty keyspace holds no key revision, or an
		// older agent): the seed, running on the restored data, is the reference.
		if rev == 0 {
			st, err := check(ctx, member.ClientURL(c, seedName), seedAddr, access, 0)
			if err != nil {
				setRestored(c, false, etcdv1beta2.ReasonRestoring, fmt.Sprintf("seed member %s does not answer yet: %v", seedName, err))
				return nil
			}
			rev = st.Revision
		}
		st, err := check(ctx, member.ClientURL(c, seedName), seedAddr, access, rev)
		if err != nil {
			setRestored(c, false, etcdv1beta2.ReasonRestoring, fmt.Sprintf("seed member %s does not answer yet: %v", seedName, err))
			return nil
		}
		want = st
	}
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		if p, ok := obs.pods[m.Name]; ok && p.DeletionTimestamp == nil {
			names = append(names, m.Name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		st, err := check(ctx, member.ClientURL(c, name), obs.pods[name].Status.PodIP, access, rev)
		if err != nil {
			setRestored(c, false, etcdv1beta2.ReasonRestoring, fmt.Sprintf("checking member %s: %v", name, err))
			return nil
		}
		if st.Hash != want.Hash || st.Keys != want.Keys {
			err := reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "member %s holds %d keys with keyspace hash %d at revision %d; the backup restored %d keys with hash %d: the cluster is left as it is, unverified", name, st.Keys, st.Hash, rev, want.Keys, want.Hash)
			setRestored(c, false, etcdv1beta2.ReasonVerificationFailed, err.Error())
			return err
		}
		if st.Revision < rev {
			err := reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "member %s is at revision %d, below the restored %d", name, st.Revision, rev)
			setRestored(c, false, etcdv1beta2.ReasonRevisionMismatch, err.Error())
			return err
		}
	}
	if len(names) == 0 {
		setRestored(c, false, etcdv1beta2.ReasonRestoring, "no restored member runs yet")
		return nil
	}
	st := c.Status.Restore
	if st == nil {
		st = &etcdv1beta2.ClusterRestoreStatus{Members: restoreNames(c)}
		c.Status.Restore = st
	}
	st.Revision, st.Hash, st.Keys = rev, int64(want.Hash), want.Keys
	if ref, _ := ms.SameSnapshot(); ref != nil {
		st.BackupRevision, st.SHA256 = ref.SnapshotRevision(), ref.SHA256
	}
	st.MembersVerified = int32(len(names)) //nolint:gosec // at most 7 members
	now := metav1.NewTime(r.Clock.Now())
	st.CompletionTime = &now
	msg := fmt.Sprintf("%d members hold the backup's %d keys at revision %d (keyspace hash %d)", len(names), st.Keys, st.Revision, st.Hash)
	setRestored(c, true, etcdv1beta2.ReasonRestoreSucceeded, msg)
	r.event(c, corev1.EventTypeNormal, "Restored", msg)
	return nil
}

// freshRestoreStatus takes into c what a pass on a cached copy may have missed and must never
// undo: a restore that was verified or failed for good, and the members whose restore failed. Without it, such
// a pass would write its own view (Restoring) over the failure with its status patch.
func (r *Reconciler) freshRestoreStatus(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	live := &etcdv1beta2.EtcdCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil {
		return fmt.Errorf("reading %s for its restore: %w", klog.KObj(c), err)
	}
	if live.UID != c.UID {
		return nil
	}
	cond := meta.FindStatusCondition(live.Status.Conditions, etcdv1beta2.ClusterConditionRestored)
	switch {
	case cond == nil:
	case cond.Status == metav1.ConditionTrue:
		meta.SetStatusCondition(&c.Status.Conditions, *cond)
		c.Status.Restore = live.Status.Restore.DeepCopy()
		return nil
	case restoreFailed(live):
		meta.SetStatusCondition(&c.Status.Conditions, *cond)
	}
	if st := live.Status.Restore; st != nil {
		if c.Status.Restore == nil {
			c.Status.Restore = st.DeepCopy()
		}
		if c.Status.Restore.Selected == nil {
			c.Status.Restore.Selected = st.Selected.DeepCopy()
		}
		for _, n := range st.FailedMembers {
			if !slices.Contains(c.Status.Restore.FailedMembers, n) {
				c.Status.Restore.FailedMembers = append(c.Status.Restore.FailedMembers, n)
			}
		}
	}
	return nil
}
