package etcdrestore

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Names and paths in the seed pod.
const (
	initInstall = "install-restore-agent"
	initRestore = "restore"
	agentVolume = "restore-agent"
	agentDir    = "/restore-agent"
	secretsDir  = "/etc/etcd-restore/secrets"
	// authDir is where the cluster's spec.auth Secret is mounted for the restore step, which
	// checks that the backup's auth store accepts it.
	authDir         = "/etc/etcd-restore/auth"
	authVolume      = "restore-auth"
	reasonSeedReady = "SeedRunning"
	// tmpVolume is the restore container's /tmp (the etcd image sets no TMPDIR), in memory.
	tmpVolume    = "tmp"
	tmpDir       = "/tmp"
	tmpSizeLimit = "16Mi"
)

// seedMeta marks obj as rs's seed in cluster c: controlled by c (a member from the start, never
// owned by the EtcdRestore, so deleting a finished EtcdRestore deletes no member), labelled with
// rs's name and annotated with its UID.
func seedMeta(obj metav1.Object, rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster) {
	labels := obj.GetLabels()
	labels[LabelRestore] = rs.Name
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationRestoreUID] = string(rs.UID)
	obj.SetAnnotations(annotations)
	obj.SetOwnerReferences([]metav1.OwnerReference{clusterRef(c)})
}

// seedPVC is the seed member's data volume, or nil when c runs its members on emptyDir.
func seedPVC(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string) *corev1.PersistentVolumeClaim {
	if c.Spec.Pod == nil || c.Spec.Pod.PersistentVolumeClaimSpec == nil {
		return nil
	}
	pvc := member.NewPVC(c, name)
	seedMeta(pvc, rs, c)
	return pvc
}

// seedPod is the pod of member name, one of the members restored at once (names): the member
// pod the etcd operator would make with all of them as the initial cluster, plus the two init
// containers that restore its data dir from the backup.
func (r *Reconciler) seedPod(rs *etcdv1beta2.EtcdRestore, c *etcdv1beta2.EtcdCluster, name string, names []string, src *source) *corev1.Pod {
	peer := member.PeerURL(c, name)
	initial := make([]string, len(names))
	for i, n := range names {
		initial[i] = n + "=" + member.PeerURL(c, n)
	}
	pod := member.NewPod(c, name, c.Spec.Version, "new", strings.Join(initial, ","))
	seedMeta(pod, rs, c)
	etcd := pod.Spec.Containers[0]

	args := []string{
		restoreseed.Command, "restore",
		"--location=" + src.loc.Encode(),
		"--secrets-dir=" + secretsDir,
		"--size=" + strconv.FormatInt(rs.Status.BackupSize, 10),
		"--sha256=" + rs.Status.BackupSHA256,
		"--data-dir=" + member.DataDir,
		"--name=" + name,
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-cluster-token=" + string(c.UID),
		"--initial-advertise-peer-urls=" + peer,
		"--timeout=" + restoreTimeout(rs.Status.BackupSize).String(),
		"--bump-revision=" + strconv.FormatInt(revisionBump(rs), 10),
	}
	mounts := []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}, {Name: tmpVolume, MountPath: tmpDir}}
	mounts = append(mounts, etcd.VolumeMounts[0]) // the data volume, at /var/etcd
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		// The root filesystem is read-only: the S3 client writes the shared credentials files it
		// reads the Secret into under the temp dir. In memory, so credentials never reach the
		// node's disk.
		corev1.Volume{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse(tmpSizeLimit))}}})
	// The storage Secrets (credentials, CA bundle) as files, never as flags or environment.
	vols, secretMounts := storage.PodSecrets(src.loc, secretsDir)
	pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	mounts = append(mounts, secretMounts...)
	if c.Spec.Auth != nil {
		// Optional, as the storage Secrets: read once, by the first run of the restore step.
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: authVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: c.Spec.Auth.SecretName, Optional: ptr.To(true)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: authVolume, MountPath: authDir, ReadOnly: true})
		args = append(args, "--auth-dir="+authDir)
	}
	// The member container's security context (restricted by default): the restore writes the
	// data dir as the user etcd will run as.
	locked := member.ContainerSecurityContext(c)
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

// revisionBump is how far rs raises the restored revision above the backup's (spec.revisionBump,
// default etcdv1beta2.DefaultRevisionBump).
func revisionBump(rs *etcdv1beta2.EtcdRestore) int64 {
	if b := rs.Spec.RevisionBump; b != nil {
		return *b
	}
	return etcdv1beta2.DefaultRevisionBump
}
