package etcdrestore

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
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
	// members: the keyspace hash holds one entry per key (etcd itself holds more). Twice the
	// backup's size comes on top (checkMemory): a cgroup's limit covers its page cache, and the
	// download and the restored database pass through it.
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

// checkName is the name of rs's restore check Job.
func checkName(rs *etcdv1beta2.EtcdRestore) string { return rs.Name + "-restore-check" }

// checkRestorable runs the whole restore pipeline once on the verified backup in a throwaway
// pod before an in-place restore deletes anything: the seed agent, in the etcd image the
// restored cluster will run, downloads the object, checks it, restores it with that image's
// etcdutl into a scratch volume and computes the keyspace hash and key count at the backup's
// revision. A backup whose checksums are valid but that etcd cannot restore fails the restore
// here, with the cluster untouched. The pod is a Job's (owned by rs, deleted once it
// reported): the restore operator writes no pod, and a pod the API server refuses (Pod
// Security, quota, a webhook) is a preflight failure too, since the members' pods would be.
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
	job := &batchv1.Job{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: checkName(rs)}, job)
	if apierrors.IsNotFound(err) {
		// Everything the replacement will need is checked before the check runs too: a
		// restore refused by its preflight should not spend the check's download first.
		if _, err := r.preflightReplace(ctx, rs, c); err != nil {
			return ctrl.Result{}, err
		}
		src, err := pinned(rs)
		if err != nil {
			return ctrl.Result{}, err
		}
		if job, err = r.checkJob(rs, c, src); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, job); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the API server refused the restore check Job: %v%s", err, noChange)
			}
			return ctrl.Result{}, fmt.Errorf("creating restore check Job %s: %w", job.Name, err)
		}
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, fmt.Sprintf("Job %s is restoring the backup into a scratch volume to prove it restorable; no cluster has been touched", job.Name))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting restore check Job %s: %w", checkName(rs), err)
	}
	if !controlledBy(job, rs.UID) {
		return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "Job %s exists and is not this restore's check: rename or delete it%s", job.Name, noChange)
	}
	pod, err := r.checkJobPod(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pod == nil {
		// The Job controller reports a pod the API server refused only as an event.
		refused, err := r.podRefused(ctx, job)
		if err != nil {
			return ctrl.Result{}, err
		}
		if refused != "" {
			if err := r.deleteCheck(ctx, rs, job); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonPreflightFailed, "the API server refused the restore check's pod, as it would the restored members' (they run the same containers with the same security context and resources): %s%s", refused, noChange)
		}
		for _, cond := range job.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				// Its pod was deleted (evicted, its node lost) before it reported.
				if err := r.deleteCheck(ctx, rs, job); err != nil {
					return ctrl.Result{}, err
				}
				return ctrl.Result{}, reason.Errorf(etcdv1beta2.ReasonSeedFailed, "restore check Job %s failed before its pod reported: %s: %s; create the EtcdRestore again to retry%s", job.Name, cond.Reason, cond.Message, noChange)
			}
		}
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, fmt.Sprintf("Job %s is starting its pod; no cluster has been touched", job.Name))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	res, done, waiting := checkResult(pod)
	if res == nil {
		msg := fmt.Sprintf("pod %s of Job %s is restoring the backup into a scratch volume to prove it restorable; no cluster has been touched", pod.Name, job.Name)
		if waiting != "" {
			msg += " (" + waiting + ")"
		}
		r.progress(rs, etcdv1beta2.RestorePhaseVerifying, msg)
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err := r.deleteCheck(ctx, rs, job); err != nil {
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

// checkJobPod reads, around the cache, the pod job controls (nil while there is none). The Job
// runs one pod and never retries it (backoffLimit 0); of several (one replaced while it was
// being deleted), the newest.
func (r *Reconciler) checkJobPod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return nil, fmt.Errorf("listing the pods of restore check Job %s: %w", job.Name, err)
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if metav1.IsControlledBy(p, job) && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	return newest, nil
}

// podRefused is the message of the Job controller's newest FailedCreate event for job: the
// API server refused its pod. "" when there is none.
func (r *Reconciler) podRefused(ctx context.Context, job *batchv1.Job) (string, error) {
	events := &corev1.EventList{}
	if err := r.APIReader.List(ctx, events, client.InNamespace(job.Namespace), client.MatchingFields{"involvedObject.uid": string(job.UID)}); err != nil {
		return "", fmt.Errorf("listing the events of restore check Job %s: %w", job.Name, err)
	}
	var msg string
	var at time.Time
	for _, e := range events.Items {
		if e.Reason != reasonFailedCreate {
			continue
		}
		if t := eventTime(&e); msg == "" || t.After(at) {
			msg, at = e.Message, t
		}
	}
	return msg, nil
}

// reasonFailedCreate is the reason of the Job controller's event for a pod it could not create.
const reasonFailedCreate = "FailedCreate"

// eventTime is when e last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// deleteCheck deletes rs's check Job and, through the garbage collector, its pod (with a UID
// precondition: only the one just read). A Job is deleted with its pods only when asked to:
// the API's default for Jobs orphans them.
func (r *Reconciler) deleteCheck(ctx context.Context, rs *etcdv1beta2.EtcdRestore, job *batchv1.Job) error {
	if !controlledBy(job, rs.UID) {
		return nil
	}
	uid := job.UID
	err := r.Delete(ctx, job, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting restore check Job %s: %w", job.Name, err)
	}
	return nil
}

// stopCheck deletes rs's check Job if one is left (a restore that timed out while it ran).
func (r *Reconciler) stopCheck(ctx context.Context, rs *etcdv1beta2.EtcdRestore) error {
	job := &batchv1.Job{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: checkName(rs)}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.deleteCheck(ctx, rs, job)
}

// checkJob is the Job that runs checkPod once: no retry (a failed check is an answer), its
// pod deleted with it.
func (r *Reconciler) checkJob(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, src *source) (*batchv1.Job, error) {
	pod, err := r.checkPod(rs, c, src)
	if err != nil {
		return nil, err
	}
	return &batchv1.Job{
		ObjectMeta: pod.ObjectMeta,
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		},
	}, nil
}

// checkPod is the pod of the check Job: the seed pod of a one-member cluster, made into a throwaway: the restore step
// runs as its only container (restartPolicy Never), on a scratch emptyDir sized for the download
// and the restored data, with the members' resources (or a memory limit of checkMemory).
// It carries none of the cluster's member labels and no owner but rs, so no etcd operator ever
// takes it for a member, and deleting the EtcdRestore deletes it.
func (r *Reconciler) checkPod(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, src *source) (*corev1.Pod, error) {
	from, err := restoreboot.FromSpec(restoreSource(rs, src))
	if err != nil {
		return nil, err
	}
	pod := restoreboot.Pod(c, scratchMember, []string{scratchMember}, from, r.AgentImage)
	pod.Name = checkName(rs)
	// app=etcd: the operators cache only such pods and Jobs (internal/manager); not a
	// member's labels, so no etcd operator ever takes it for one.
	pod.Labels = map[string]string{member.LabelApp: member.AppEtcd, LabelRestore: rs.Name}
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
		limit := checkMemory(rs.Status.BackupSize)
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

// checkMemory is the check's memory limit when the members set none: checkMemoryLimit plus
// twice the backup's size. With 1 GiB alone, a 1 GiB backup's check spent 54 s writing back its
// page cache under the limit where the three members, unlimited, restored it in 18 s
// (make bench-cluster, 2026-11-27).
func checkMemory(backupSize int64) resource.Quantity {
	limit := resource.MustParse(checkMemoryLimit)
	limit.Add(*resource.NewQuantity(2*backupSize, resource.BinarySI))
	return limit
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
