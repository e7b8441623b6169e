package etcdrestore

import (
	"context"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Names and paths in the seed pod.
const (
	initInstall     = "install-restore-agent"
	initRestore     = "restore"
	agentVolume     = "restore-agent"
	agentDir        = "/restore-agent"
	credsVolume     = "restore-credentials"
	credsDir        = "/etc/etcd-restore/credentials"
	reasonSeedReady = "SeedRunning"
)

// seed makes sure the cluster exists, creates the seed member's pod, and waits until it runs on
// the restored data; then it records the seed's keyspace hash, the reference every member is
// checked against later.
func (r *Reconciler) seed(ctx context.Context, rs *etcdv1beta2.EtcdRestore) (ctrl.Result, error) {
	c, err := r.ensureCluster(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	name := c.Spec.Bootstrap.Restore.SeedMember
	rs.Status.SeedMember = name
	pod := &corev1.Pod{}
	err = r.Get(ctx, types.NamespacedName{Namespace: rs.Namespace, Name: name}, pod)
	if apierrors.IsNotFound(err) {
		if err := r.createSeed(ctx, rs, c, name); err != nil {
			return ctrl.Result{}, err
		}
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "seed pod "+name+" is fetching, verifying and restoring the backup")
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting seed pod %s: %w", name, err)
	}

	res, done, waiting := seedResult(pod)
	switch {
	case res != nil && res.Outcome == restoreseed.OutcomeFailed:
		if res.Reason == etcdv1beta2.ReasonStorageUnreachable || res.Reason == etcdv1beta2.ReasonTimeout {
			r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "seed pod "+name+" retries: "+res.Message)
			return ctrl.Result{RequeueAfter: requeueBackoff}, nil
		}
		// The kubelet would retry forever: stop the pod and say what is left.
		if err := r.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting failed seed pod %s: %w", name, err)
		}
		return ctrl.Result{}, failure(res.Reason, "seed member %s could not restore the backup: %s. EtcdCluster %s was created for the restore and has no running member; fix the cause and create a new EtcdRestore", name, res.Message, c.Name)
	case !done:
		msg := "seed pod " + name + " is fetching, verifying and restoring the backup"
		if waiting != "" {
			msg += " (" + waiting + ")"
		}
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, msg)
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if res != nil && res.Revision > 0 {
		if rs.Status.BackupRevision > res.Revision {
			return ctrl.Result{}, failure(etcdv1beta2.ReasonRevisionMismatch, "the backup recorded revision %d but the restored snapshot ends at revision %d", rs.Status.BackupRevision, res.Revision)
		}
		rs.Status.BackupRevision = res.Revision
		if rs.Status.Verification == nil {
			rs.Status.Verification = &etcdv1beta2.RestoreVerification{}
		}
		rs.Status.Verification.Revision = res.Revision
		rs.Status.Verification.SnapshotHash = int64(res.HashKV)
	}
	if !podReady(pod) {
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, "seed member "+name+" restored the backup and is starting etcd")
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	if rs.Status.Verification == nil || rs.Status.Verification.Revision == 0 {
		return ctrl.Result{}, failure(etcdv1beta2.ReasonSeedFailed, "seed member %s runs but its restore step reported no revision", name)
	}
	tlsCfg, err := r.clientTLS(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, err := r.Check(ctx, member.ClientURL(c, name), tlsCfg, rs.Status.Verification.Revision)
	if err != nil {
		r.progress(rs, etcdv1beta2.RestorePhaseSeeding, fmt.Sprintf("seed member %s does not answer yet: %v", name, err))
		return ctrl.Result{RequeueAfter: requeueWait}, nil
	}
	v := rs.Status.Verification
	v.Hash, v.Keys = int64(st.Hash), st.Keys
	if v.SnapshotHash != 0 && v.SnapshotHash != v.Hash {
		return ctrl.Result{}, failure(etcdv1beta2.ReasonVerificationFailed, "seed member %s serves keyspace hash %d at revision %d, but etcdutl computed %d from the restored data", name, v.Hash, v.Revision, v.SnapshotHash)
	}
	msg := fmt.Sprintf("seed member %s runs on the restored data: %d keys at revision %d, keyspace hash %d", name, v.Keys, v.Revision, v.Hash)
	r.setCondition(rs, etcdv1beta2.RestoreConditionSeeded, metav1.ConditionTrue, reasonSeedReady, msg)
	r.Recorder.Event(rs, corev1.EventTypeNormal, "Seeded", msg)
	r.progress(rs, etcdv1beta2.RestorePhaseGrowing, "waiting for the etcd operator to adopt the seed and grow the cluster")
	return ctrl.Result{RequeueAfter: requeueStep}, nil
}

// createSeed creates the seed member's volume (if the cluster uses volumes) and pod.
func (r *Reconciler) createSeed(ctx context.Context, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string) error {
	if r.AgentImage == "" {
		return failure(etcdv1beta2.ReasonSeedFailed, "the restore operator does not know the image of its seed agent: run it with --seed-agent-image, or with POD_NAME and POD_NAMESPACE set from the downward API")
	}
	src, err := pinned(rs)
	if err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: etcdv1beta2.GroupVersion.String(), Kind: "EtcdRestore", Name: rs.Name, UID: rs.UID}
	if c.Spec.Pod != nil && c.Spec.Pod.PersistentVolumeClaimSpec != nil {
		pvc := member.NewPVC(c, name)
		pvc.Labels[LabelRestore] = rs.Name
		pvc.OwnerReferences = []metav1.OwnerReference{owner}
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating seed volume %s: %w", name, err)
		}
	}
	pod := r.seedPod(rs, c, name, src)
	// Not a controller reference: the etcd operator adopts the seed as its controller. This
	// one lets the garbage collector remove a seed that was never adopted with its EtcdRestore.
	pod.OwnerReferences = []metav1.OwnerReference{owner}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating seed pod %s: %w", name, err)
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, "SeedCreated", "Created seed member %s to restore %s", name, rs.Status.BackupLocation)
	return nil
}

// seedPod is the member pod the etcd operator would make for the cluster's first member, plus
// the two init containers that restore its data dir from the backup.
func (r *Reconciler) seedPod(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string, src *source) *corev1.Pod {
	peer := member.PeerURL(c, name)
	pod := member.NewPod(c, name, c.Spec.Version, "new", name+"="+peer)
	pod.Labels[LabelRestore] = rs.Name
	etcd := pod.Spec.Containers[0]

	endpoint, pathStyle := src.endpoint()
	args := []string{
		restoreseed.Command, "restore",
		"--storage-type=" + string(src.spec.StorageType),
		"--bucket=" + src.bucket,
		"--key=" + src.key,
		"--size=" + strconv.FormatInt(rs.Status.BackupSize, 10),
		"--sha256=" + rs.Status.BackupSHA256,
		"--data-dir=" + member.DataDir,
		"--name=" + name,
		"--initial-cluster=" + name + "=" + peer,
		"--initial-cluster-token=" + string(c.UID),
		"--initial-advertise-peer-urls=" + peer,
		"--timeout=" + restoreTimeout(rs.Status.BackupSize).String(),
	}
	if endpoint != "" {
		args = append(args, "--endpoint="+endpoint)
	}
	if pathStyle {
		args = append(args, "--force-path-style")
	}
	mounts := []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}}
	mounts = append(mounts, etcd.VolumeMounts[0]) // the data volume, at /var/etcd
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if secret := src.secretName(); secret != "" {
		args = append(args, "--secret-dir="+credsDir)
		mounts = append(mounts, corev1.VolumeMount{Name: credsVolume, MountPath: credsDir, ReadOnly: true})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: credsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	}
	locked := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	pod.Spec.InitContainers = []corev1.Container{
		{
			Name:            initInstall,
			Image:           r.AgentImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"/usr/local/bin/restore-operator", restoreseed.Command, "install", agentDir},
			VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}},
			SecurityContext: locked,
		},
		{
			// The etcd image itself, so that etcdutl matches the etcd that will run the data.
			Name:                     initRestore,
			Image:                    etcd.Image,
			ImagePullPolicy:          etcd.ImagePullPolicy,
			Command:                  append([]string{path.Join(agentDir, restoreseed.AgentName)}, args...),
			VolumeMounts:             mounts,
			Resources:                etcd.Resources,
			SecurityContext:          locked,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
	}
	return pod
}

// seedResult reads the restore step's outcome from the seed pod. done is true once it
// succeeded (now or on an earlier run); waiting says why the pod's init containers wait.
func seedResult(p *corev1.Pod) (res *restoreseed.Result, done bool, waiting string) {
	for _, st := range p.Status.InitContainerStatuses {
		if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			waiting = fmt.Sprintf("%s: %s %s", st.Name, w.Reason, w.Message)
		}
		if st.Name != initRestore {
			continue
		}
		if t := st.State.Terminated; t != nil {
			res, _ = restoreseed.ParseResult(t.Message)
			if t.ExitCode == 0 {
				return res, true, ""
			}
			if res == nil {
				res = &restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonSeedFailed, Message: fmt.Sprintf("exit code %d: %s", t.ExitCode, t.Message)}
			}
			return res, false, waiting
		}
		if t := st.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
			res, _ = restoreseed.ParseResult(t.Message)
			if res == nil {
				res = &restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonSeedFailed, Message: fmt.Sprintf("exit code %d: %s", t.ExitCode, t.Message)}
			}
			return res, false, waiting
		}
	}
	// Init containers that are all done no longer report a state of their own once the pod
	// runs: etcd's container started, so the restore step succeeded.
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == member.ContainerName && (st.State.Running != nil || st.RestartCount > 0) {
			return res, true, ""
		}
	}
	return nil, false, waiting
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
