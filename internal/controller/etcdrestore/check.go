package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

const (
	// scratchMember is the member name the restore check restores as (nothing ever runs it).
	scratchMember = "restore-check"
	// reasonRestorable is BackupRestorable's reason when the check passed.
	reasonRestorable = "RestoredInScratch"
	// reasonCheckSkipped is BackupRestorable's reason (status Unknown) when an in-place restore
	// found no cluster to replace: with nothing to destroy, it does not run the check.
	reasonCheckSkipped = "NothingToReplace"
	// checkMemoryLimit bounds the check's memory when the cluster sets no memory limit for its
	// members: the keyspace hash holds one entry per key (etcd itself holds more).
	checkMemoryLimit = "1Gi"
)

// needsCheck reports whether rs must prove the backup restorable before it goes on: an in-place
// restore whose cluster has not been replaced yet. A restore into a new name destroys nothing
// and its members run the same pipeline.
func needsCheck(rs *etcdv1beta2.EtcdRestore) bool {
	_, replaced := rs.Annotations[AnnotationClusterTemplate]
	return rs.Spec.ClusterTemplate == nil && !replaced
}

// checkDone reports whether rs's restorable check passed or was skipped.
func checkDone(rs *etcdv1beta2.EtcdRestore) bool {
	c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupRestorable)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == reasonCheckSkipped)
}

// checkPodName is the name of rs's restore check pod.
func checkPodName(rs *etcdv1beta2.EtcdRestore) string { return rs.Name + "-restore-check" }

// checkRestorable runs the whole restore pipeline once on the verified backup in a throwaway
// pod before an in-place restore deletes anything: the seed agent, in the etcd image the
// restored cluster will run, downloads the object, checks it, restores it with that image's
// etcdutl into a scratch volume and computes the keyspace hash and key count at the backup's
// revision. A backup whose checksums are valid but that etcd cannot restore fails the restore
// here, with the cluster untouched. The pod belongs to rs and is deleted once it reported.
func (r *Reconciler) checkRestorable(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	c := &etcdv1beta2.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: rs.Spec.EtcdCluster.Name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing to replace, so nothing to destroy (a retry after an in-place restore that
			// deleted the cluster and failed): the members run the same pipeline.
			r.setCondition(rs, etcdv1beta2.RestoreConditionBackupRestorable, metav1.ConditionUnknown, reasonCheckSkipped,
				fmt.Sprintf("EtcdCluster %s does not exist: no cluster is replaced, and the restored members run the same pipeline", rs.Spec.EtcdCluster.Name))
			return ctrl.Result{RequeueAfter: requeueNow}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting EtcdCluster %s: %w", rs.Spec.EtcdCluster.Name, err)
	}
	pod := &corev1.Pod{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: checkPodName(rs)}, pod)
	if apierrors.IsNotFound(err) {
		// Everything the replacement will need is checked before the check pod runs too: a
		// restore refused by its preflight should not spend the check's download first.
		if _, err := r.preflightReplace(ctx, rs, c); err != nil {
			return ctrl.Result{}, err
		}
		src, err := pinned(rs)
		if err != nil {
			return ctrl.Result{}, err
		}
		if pod, err = r.checkPod(rs, c, src); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, pod); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the API server refused the restore check pod: %v%s", err, noChange)
			}
			return ctrl.Result{}, fmt.Errorf("creating restore check pod %s: %w", pod.Name, err)
		}
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, fmt.Sprintf("pod %s is restoring the backup into a scratch volume to prove it restorable; no cluster has been touched", pod.Name))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting restore check pod %s: %w", checkPodName(rs), err)
	}
	if !controlledBy(pod, rs.UID) {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "pod %s exists and is not this restore's check: rename or delete it%s", pod.Name, noChange)
	}
	res, done, waiting := checkResult(pod)
	if res == nil {
		msg := fmt.Sprintf("pod %s is restoring the backup into a scratch volume to prove it restorable; no cluster has been touched", pod.Name)
		if waiting != "" {
			msg += " (" + waiting + ")"
		}
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, msg)
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err := r.deleteCheck(ctx, rs, pod); err != nil {
		return ctrl.Result{}, err
	}
	if !done {
		why := res.Reason
		if why == "" {
			why = etcdv1beta2.ReasonSeedFailed
		}
		msg := "the backup's checksums are valid but it did not restore: " + res.Message
		r.setCondition(rs, etcdv1beta2.RestoreConditionBackupRestorable, metav1.ConditionFalse, why, msg)
		return ctrl.Result{}, reason.Errorf(why, "%s%s", msg, noChange)
	}
	if rs.Status.BackupRevision > res.SnapshotRevision() {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonRevisionMismatch, "the backup recorded revision %d but the restored snapshot ends at revision %d%s", rs.Status.BackupRevision, res.SnapshotRevision(), noChange)
	}
	rs.Status.Verification = &etcdv1beta2.RestoreVerification{Revision: res.Revision, SnapshotHash: int64(res.HashKV), Keys: res.Keys}
	msg := fmt.Sprintf("restored in pod %s in %.1f s: %d keys at revision %d, keyspace hash %d", pod.Name, res.Seconds, res.Keys, res.Revision, res.HashKV)
	r.setCondition(rs, etcdv1beta2.RestoreConditionBackupRestorable, metav1.ConditionTrue, reasonRestorable, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "BackupRestorable", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "backup restorable; preparing the cluster")
	return ctrl.Result{RequeueAfter: requeueNow}, nil
}

// deleteCheck deletes rs's check pod (with a UID precondition: only the one just read).
func (r *Reconciler) deleteCheck(ctx context.Context, rs *etcdv1beta2.EtcdRestore, pod *corev1.Pod) error {
	if !controlledBy(pod, rs.UID) {
		return nil
	}
	uid := pod.UID
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting restore check pod %s: %w", pod.Name, err)
	}
	return nil
}

// stopCheck deletes rs's check pod if one is left (a restore that timed out while it ran).
func (r *Reconciler) stopCheck(ctx context.Context, rs *etcdv1beta2.EtcdRestore) error {
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: checkPodName(rs)}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.deleteCheck(ctx, rs, pod)
}

// checkPod is the seed pod of a one-member cluster, made into a throwaway: the restore step
// runs as its only container (restartPolicy Never), on a scratch emptyDir sized for the download
// and the restored data, with the members' resources (or a memory limit of checkMemoryLimit).
// It carries none of the cluster's member labels and no owner but rs, so no etcd operator ever
// takes it for a member, and deleting the EtcdRestore deletes it.
func (r *Reconciler) checkPod(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, src *source) (*corev1.Pod, error) {
	from, err := restoreboot.FromSpec(restoreSource(rs, src))
	if err != nil {
		return nil, err
	}
	pod := restoreboot.Pod(c, scratchMember, []string{scratchMember}, from, r.AgentImage)
	pod.Name = checkPodName(rs)
	pod.Labels = map[string]string{LabelRestore: rs.Name}
	pod.Annotations = map[string]string{etcdv1beta2.AnnotationRestoreUID: string(rs.UID)}
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: rs.Name, UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	spec := &pod.Spec
	spec.Hostname, spec.Subdomain, spec.HostAliases = "", "", nil
	spec.Affinity, spec.TopologySpreadConstraints, spec.PriorityClassName = nil, nil, ""
	spec.RestartPolicy = corev1.RestartPolicyNever
	restore := spec.InitContainers[1]
	spec.InitContainers = spec.InitContainers[:1]
	spec.Containers = []corev1.Container{restore}
	res := &spec.Containers[0].Resources
	if _, ok := res.Limits[corev1.ResourceMemory]; !ok {
		res.Limits = res.Limits.DeepCopy()
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		limit := resource.MustParse(checkMemoryLimit)
		if req, ok := res.Requests[corev1.ResourceMemory]; ok && req.Cmp(limit) > 0 {
			limit = req // a limit below the request is invalid
		}
		res.Limits[corev1.ResourceMemory] = limit
	}
	// Only the volumes the remaining containers mount (not the TLS Secrets etcd would read),
	// and the data volume as a bounded scratch emptyDir instead of a member's volume.
	mounted := map[string]bool{}
	for _, ct := range append(spec.InitContainers, spec.Containers...) {
		for _, m := range ct.VolumeMounts {
			mounted[m.Name] = true
		}
	}
	scratch := resource.NewQuantity(2*rs.Status.BackupSize+128<<20, resource.BinarySI)
	vols := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if !mounted[v.Name] {
			continue
		}
		if v.Name == member.DataVolume {
			v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: scratch}}
		}
		vols = append(vols, v)
	}
	spec.Volumes = vols
	return pod, nil
}

// checkResult reads the check's outcome: res is nil while it runs; done is true when it
// restored.
func checkResult(p *corev1.Pod) (res *restoreseed.Result, done bool, waiting string) {
	for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			waiting = fmt.Sprintf("%s: %s %s", st.Name, w.Reason, w.Message)
		}
		t := st.State.Terminated
		if t == nil {
			continue
		}
		if st.Name == restoreboot.InitInstall && t.ExitCode != 0 {
			return &restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonSeedFailed, Message: fmt.Sprintf("installing the agent: exit code %d: %s", t.ExitCode, t.Message)}, false, waiting
		}
		if st.Name != restoreboot.InitRestore {
			continue
		}
		res, _ := restoreseed.ParseResult(t.Message)
		if t.ExitCode == 0 && res != nil && res.Outcome == restoreseed.OutcomeRestored {
			return res, true, ""
		}
		if res == nil || res.Outcome != restoreseed.OutcomeFailed {
			res = &restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonSeedFailed, Message: fmt.Sprintf("exit code %d: %s", t.ExitCode, t.Message)}
		}
		return res, false, waiting
	}
	if p.Status.Phase == corev1.PodFailed { // evicted, or its node lost
		return &restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonSeedFailed, Message: fmt.Sprintf("pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)}, false, ""
	}
	return nil, false, waiting
}
