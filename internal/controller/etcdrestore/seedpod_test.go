package etcdrestore

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestSeedPodIsRestricted: a restore's seed pod passes Pod Security "restricted" with the
// cluster's defaults, and its restore container, whose root filesystem is read-only, gets a
// writable in-memory /tmp (the S3 client writes the credentials files it reads the Secret into
// there; a drill on the local cluster failed with "mkdir /tmp/aws-secret-...: read-only file
// system" before).
func TestSeedPodIsRestricted(t *testing.T) {
	r := &Reconciler{AgentImage: "etcd-operator:dev"}
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"}, Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16"}}
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "rs-uid"}}
	src := &source{loc: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "k", Secret: "aws"}}
	pod := r.seedPod(rs, c, "db-0", []string{"db-0"}, src)
	v, err := testutil.RestrictedViolations(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Fatalf("the seed pod violates Pod Security restricted: %s", strings.Join(v, "; "))
	}
	var restore *corev1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == initRestore {
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
