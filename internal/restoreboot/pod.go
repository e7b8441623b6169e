package restoreboot

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Names and paths in a restored member's pod.
const (
	// InitInstall copies the agent out of the operator image.
	InitInstall = "install-restore-agent"
	// InitRestore fetches, checks and restores the backup, in the etcd image.
	InitRestore = "restore"
	agentVolume = "restore-agent"
	agentDir    = "/restore-agent"
	secretsDir  = "/etc/etcd-restore/secrets"
	// authDir is where the cluster's spec.auth Secret is mounted for the restore step, which
	// checks that the backup's auth store accepts it.
	authDir    = "/etc/etcd-restore/auth"
	authVolume = "restore-auth"
	// tmpVolume is the restore container's /tmp (the etcd image sets no TMPDIR), in memory.
	tmpVolume    = "tmp"
	tmpDir       = "/tmp"
	tmpSizeLimit = "16Mi"
)

// Initial is the --initial-cluster of members names of c restored at once.
func Initial(c *etcdv1beta2.EtcdCluster, names []string) string {
	initial := make([]string, len(names))
	for i, n := range names {
		initial[i] = n + "=" + member.PeerURL(c, n)
	}
	return strings.Join(initial, ",")
}

// Pod is the pod of member name of c, one of the members restored at once (names) from src: the
// member pod the etcd operator makes for a new cluster with all of them as the initial cluster,
// plus the two init containers that restore its data dir from the backup. agentImage holds the
// restore-operator binary. The caller sets the owner.
func Pod(c *etcdv1beta2.EtcdCluster, name string, names []string, src Source, agentImage string) *corev1.Pod {
	initial := Initial(c, names)
	pod := member.NewPod(c, name, c.Spec.Version, "new", initial)
	etcd := pod.Spec.Containers[0]

	args := []string{
		restoreseed.Command, "restore",
		"--location=" + src.Loc.Encode(),
		"--secrets-dir=" + secretsDir,
		"--size=" + strconv.FormatInt(src.Expect.Size, 10),
		"--sha256=" + src.Expect.SHA256,
		"--data-dir=" + member.DataDir,
		"--name=" + name,
		"--initial-cluster=" + initial,
		"--initial-cluster-token=" + string(c.UID),
		"--initial-advertise-peer-urls=" + member.PeerURL(c, name),
		"--timeout=" + Timeout(src.Expect.Size).String(),
		"--bump-revision=" + strconv.FormatInt(src.RevisionBump, 10),
	}
	if src.ToRevision > 0 {
		args = append(args, "--point-in-time", "--to-revision="+strconv.FormatInt(src.ToRevision, 10))
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
	vols, secretMounts := storage.PodSecrets(src.Loc, secretsDir)
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
			Name:            InitInstall,
			Image:           agentImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"/usr/local/bin/restore-operator", restoreseed.Command, "install", agentDir},
			VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}},
			SecurityContext: locked,
		},
		{
			// The etcd image itself, so that etcdutl matches the etcd that will run the data.
			Name:                     InitRestore,
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

// IsRestorePod reports whether p restores its data dir from a backup before etcd starts.
func IsRestorePod(p *corev1.Pod) bool {
	for _, ct := range p.Spec.InitContainers {
		if ct.Name == InitRestore {
			return true
		}
	}
	return false
}

// Result reads the restore step's outcome from a restored member's pod. done is true once it
// succeeded (now or on an earlier run); waiting says why the pod's init containers wait.
func Result(p *corev1.Pod) (res *restoreseed.Result, done bool, waiting string) {
	for _, st := range p.Status.InitContainerStatuses {
		if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			waiting = fmt.Sprintf("%s: %s %s", st.Name, w.Reason, w.Message)
		}
		if st.Name != InitRestore {
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
