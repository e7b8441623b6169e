package restoreboot

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestPodIsRestricted: a restored member's pod passes Pod Security "restricted" with the
// cluster's defaults, and its restore container, whose root filesystem is read-only, gets a
// writable in-memory /tmp (the S3 client writes the credentials files it reads the Secret into
// there; a drill on the local cluster failed with "mkdir /tmp/aws-secret-...: read-only file
// system" before).
func TestPodIsRestricted(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16"}}
	src := Source{Loc: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "k", Secret: "aws"}}
	pod := Pod(c, "db-0", []string{"db-0"}, src, "etcd-operator:dev")
	v, err := testutil.RestrictedViolations(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Fatalf("the member pod violates Pod Security restricted: %s", strings.Join(v, "; "))
	}
	// The member runs on this pod for life, long after its restore read the storage Secret.
	for _, vol := range pod.Spec.Volumes {
		if vol.Secret != nil && vol.Secret.SecretName == "aws" && (vol.Secret.Optional == nil || !*vol.Secret.Optional) {
			t.Errorf("storage Secret volume %s is required: a deleted or rotated Secret would keep the restored member from starting again", vol.Name)
		}
	}
	var restore *corev1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == InitRestore {
			restore = &pod.Spec.InitContainers[i]
		}
	}
	if restore == nil || restore.SecurityContext == nil || restore.SecurityContext.ReadOnlyRootFilesystem == nil || !*restore.SecurityContext.ReadOnlyRootFilesystem {
		t.Fatalf("restore container %+v, want a read-only root filesystem", restore)
	}
	var tmp string
	for _, m := range restore.VolumeMounts {
		if m.MountPath == "/tmp" && !m.ReadOnly {
			tmp = m.Name
		}
	}
	var medium corev1.StorageMedium
	for _, vol := range pod.Spec.Volumes {
		if vol.Name == tmp && vol.EmptyDir != nil {
			medium = vol.EmptyDir.Medium
		}
	}
	if tmp == "" || medium != corev1.StorageMediumMemory {
		t.Fatalf("restore container mounts %+v, want a writable in-memory emptyDir at /tmp", restore.VolumeMounts)
	}
}

// TestPodArgsRoundTrip: the restore step of a member's pod, read the way the agent reads it (its
// own flag parser), names exactly the source's object, size and sha256, the member and the
// cluster's token, and every Secret the location needs is mounted where the agent looks for it:
// the operator's encoding and the agent's decoding agree.
func TestPodArgsRoundTrip(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16"}}
	loc := storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "prod/k", Endpoint: "https://minio:9000", ForcePathStyle: true, Secret: "aws",
		CA: &etcdv1beta2.SecretKeySelector{Name: "private-ca", Key: "ca.crt"}}
	src := Source{Loc: loc, Expect: restoreseed.Expect{Size: 4096, SHA256: strings.Repeat("ab", 32)}, RevisionBump: 7}
	pod := Pod(c, "db-1", []string{"db-0", "db-1", "db-2"}, src, "etcd-operator:dev")
	step := pod.Spec.InitContainers[1]
	if len(step.Command) < 3 || step.Command[1] != restoreseed.Command || step.Command[2] != "restore" {
		t.Fatalf("restore step command %q", step.Command)
	}
	got, err := restoreseed.ParseRestoreArgs(step.Command[3:])
	if err != nil {
		t.Fatalf("the agent cannot parse its arguments %q: %v", step.Command, err)
	}
	if !reflect.DeepEqual(got.Location, loc) || got.Expect != src.Expect || got.Name != "db-1" || got.ClusterToken != "uid" || got.BumpRevision != 7 ||
		got.InitialCluster != Initial(c, []string{"db-0", "db-1", "db-2"}) {
		t.Fatalf("the agent would restore %+v", got)
	}
	mounted := map[string]bool{}
	for _, m := range step.VolumeMounts {
		mounted[m.MountPath] = true
	}
	for _, name := range []string{"aws", "private-ca"} {
		if !mounted[filepath.Join(got.SecretsDir, name)] {
			t.Errorf("Secret %s is not mounted at %s: mounts %+v", name, filepath.Join(got.SecretsDir, name), step.VolumeMounts)
		}
	}
}
