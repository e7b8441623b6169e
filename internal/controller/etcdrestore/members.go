package etcdrestore

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// bootstrapMembers are the members c is restored into at once: bootstrap.restore.members, or
// the seed member alone (a cluster made before members existed; the etcd operator adds the
// others through raft).
func bootstrapMembers(c *etcdv1beta2.EtcdCluster) []string {
	b := c.Spec.Bootstrap.Restore
	if len(b.Members) > 0 {
		return b.Members
	}
	return []string{b.SeedMember}
}

// memberRestore is how one restored member's pod is doing.
type memberRestore struct {
	name string
	pod  *corev1.Pod // nil: no pod (not created yet, or deleted once the cluster formed)
	// created is true when this pass created the pod.
	created bool
	res     *restoreseed.Result
	done    bool   // the restore step succeeded
	waiting string // why the pod's init containers wait
}

// failed reports whether m's restore step failed for good (a retry would fail the same way).
func (m *memberRestore) failed() bool {
	return m.pod != nil && !m.done && m.res != nil && m.res.Outcome == restoreseed.OutcomeFailed &&
		m.res.Reason != etcdv1beta2.ReasonStorageUnreachable && m.res.Reason != etcdv1beta2.ReasonTimeout
}

// memberRestores are the restored members of one cluster, in the order of bootstrapMembers.
type memberRestores []*memberRestore

// restoringMembers reads the pod of every member rs restores c into. While the cluster has not
// formed (ms.formed), a member without a pod gets its pod (and volume) if create is set, and a
// pod at a member's name that rs did not create fails the restore with SeedConflict (the etcd
// operator creates nothing before then). Once it formed, the members are the etcd operator's:
// a missing one is its to replace, and a pod it made is not looked at.
func (r *Reconciler) restoringMembers(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, create bool) (memberRestores, error) {
	names := bootstrapMembers(c)
	ms := make(memberRestores, 0, len(names))
	var missing []*memberRestore
	var foreign []*corev1.Pod
	for _, name := range names {
		m := &memberRestore{name: name}
		ms = append(ms, m)
		pod := &corev1.Pod{}
		err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: name}, pod)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, m)
			continue
		case err != nil:
			return nil, fmt.Errorf("getting the pod of member %s: %w", name, err)
		}
		if !seedOf(pod, rs, c) {
			foreign = append(foreign, pod)
			continue
		}
		m.pod = pod
		m.res, m.done, m.waiting = seedResult(pod)
	}
	if !create || ms.formed(c) {
		return ms, nil
	}
	if len(foreign) > 0 {
		return nil, seedConflict("pod", foreign[0])
	}
	for _, m := range missing {
		if err := r.createSeed(ctx, rs, c, m.name, names); err != nil {
			return nil, err
		}
		m.created = true
	}
	return ms, nil
}

// created are the members whose pods this pass created.
func (ms memberRestores) created() []string {
	var out []string
	for _, m := range ms {
		if m.created {
			out = append(out, m.name)
		}
	}
	return out
}

// reference is the first member that restored the backup and runs etcd on it, or nil. It need
// not be ready yet: its keyspace hash, key count and status are its own store's answers, which
// need no leader, and waiting for the readiness probe's next period would only add seconds
// while the other members start.
func (ms memberRestores) reference() *memberRestore {
	for _, m := range ms {
		if m.pod != nil && m.done && m.pod.DeletionTimestamp == nil && (podReady(m.pod) || etcdRunning(m.pod)) {
			return m
		}
	}
	return nil
}

// formed reports whether the members restored into c have formed a cluster that may serve
// writes: the etcd operator recorded its cluster ID, or a quorum of them runs (or ran) etcd on
// the restored data. From then on no member that runs etcd is stopped, whatever happens to the
// restore: a client may have written to it.
func (ms memberRestores) formed(c *etcdv1beta2.EtcdCluster) bool {
	if c.Status.ClusterID != "" {
		return true
	}
	return len(ms.started()) > len(ms)/2
}

// started are the members that restored the backup and whose etcd has started on it.
func (ms memberRestores) started() []string {
	var out []string
	for _, m := range ms {
		if m.pod != nil && m.done && etcdStarted(m.pod) {
			out = append(out, m.name)
		}
	}
	return out
}

// etcdStarted reports whether the etcd container of p runs or ever ran.
func etcdStarted(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == member.ContainerName {
			return st.State.Running != nil || st.State.Terminated != nil || st.RestartCount > 0 || st.Ready
		}
	}
	return podReady(p)
}

// etcdRunning reports whether the etcd container of p runs.
func etcdRunning(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == member.ContainerName {
			return st.State.Running != nil
		}
	}
	return false
}

// sameSnapshot checks that every member that reported its restore found the same revision and
// keyspace hash in the backup: they all restored the one verified object.
func (ms memberRestores) sameSnapshot() error {
	var first *memberRestore
	for _, m := range ms {
		if !m.done || m.res == nil || m.res.Revision == 0 {
			continue
		}
		if first == nil {
			first = m
			continue
		}
		if m.res.Revision != first.res.Revision || (m.res.HashKV != 0 && first.res.HashKV != 0 && m.res.HashKV != first.res.HashKV) {
			return reason.Errorf(etcdv1beta2.ReasonVerificationFailed, "members %s and %s restored different data from the same backup: revision %d hash %d, revision %d hash %d",
				first.name, m.name, first.res.Revision, first.res.HashKV, m.res.Revision, m.res.HashKV)
		}
	}
	return nil
}

// describe says where each member's restore is, for the Seeding progress message.
func (ms memberRestores) describe() string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		var st string
		switch {
		case m.pod == nil:
			st = "no pod"
		case m.done:
			st = "restored, starting etcd"
		case m.res != nil && m.res.Outcome == restoreseed.OutcomeFailed:
			st = "retrying: " + m.res.Message
		default:
			st = "fetching, verifying and restoring the backup"
		}
		if m.waiting != "" {
			st += " (" + m.waiting + ")"
		}
		parts = append(parts, m.name+" "+st)
	}
	return fmt.Sprintf("restoring the backup into %d members at once, waiting for one to run on it: %s", len(ms), strings.Join(parts, "; "))
}

// stopFailed deals with members whose restore step failed for good; the kubelet would retry
// them forever. Before the cluster formed (ms.formed: no cluster ID and no quorum running etcd
// on the restored data), nothing serves anything yet: every member's pod is stopped and the
// restore fails (the cluster is left memberless, as a failed seed always left it). Should a
// member fail after it formed, the members that run hold the data and may hold writes: only the
// failed member's pod is stopped, and the etcd operator replaces that member from them, as it
// would any member lost after a restore.
func (r *Reconciler) stopFailed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, ms memberRestores) error {
	var failed *memberRestore
	for _, m := range ms {
		if m.failed() {
			failed = m
			break
		}
	}
	if failed == nil {
		return nil
	}
	if ms.formed(c) {
		for _, m := range ms {
			if !m.failed() {
				continue
			}
			if err := r.stopSeed(ctx, rs, c, m.pod); err != nil {
				return err
			}
			r.Recorder.Eventf(rs, corev1.EventTypeWarning, m.res.Reason, "Member %s could not restore the backup (%s); its pod was deleted and the etcd operator replaces the member from the members that run on the restored data", m.name, m.res.Message)
		}
		return nil
	}
	if err := r.stopAll(ctx, rs, c, ms); err != nil {
		return err
	}
	return reason.Errorf(failed.res.Reason, "member %s could not restore the backup: %s", failed.name, failed.res.Message)
}

// stopAll stops the pod of every member of ms: only for a cluster that has not formed.
func (r *Reconciler) stopAll(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, ms memberRestores) error {
	for _, m := range ms {
		if m.pod != nil {
			if err := r.stopSeed(ctx, rs, c, m.pod); err != nil {
				return err
			}
		}
	}
	return nil
}
