package etcdrestore

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestCheckPodMemory: the check's memory is bounded by the members' limit, by 1 GiB plus twice
// the backup (its page cache) when they set none, and never below the members' request (a
// limit below it would be refused).
func TestCheckPodMemory(t *testing.T) {
	r := &Reconciler{AgentImage: "etcd-operator:dev"}
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "rs-uid"}}
	src := &source{loc: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "k", Secret: "aws"}}
	for _, tc := range []struct {
		name      string
		resources corev1.ResourceRequirements
		want      string
	}{
		{"none", corev1.ResourceRequirements{}, "1Gi"},
		{"none, 1 GiB backup", corev1.ResourceRequirements{}, "3Gi"},
		{"member limit", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}}, "3Gi"},
		{"request above 1Gi", corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}, "2Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs.Status.BackupSize = 0
			if strings.Contains(tc.name, "1 GiB backup") {
				rs.Status.BackupSize = 1 << 30
			}
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"},
				Spec: etcdv1beta2.ClusterSpec{Size: 3, Version: "3.6.16", Pod: &etcdv1beta2.PodPolicy{Resources: tc.resources}}}
			pod, err := r.checkPod(rs, c, src)
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Spec.Containers[0].Resources.Limits.Memory(); got.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Fatalf("memory limit %s, want %s", got, tc.want)
			}
			if tc.resources.Limits == nil && c.Spec.Pod.Resources.Limits != nil {
				t.Fatal("the cluster's resources were changed")
			}
		})
	}
}

// TestMembersRaiseTheRevision: the restore step of every member (built by the etcd operator
// from the bootstrap.restore.source this restore writes) and of the check pod raises the revision by etcd's recommended amount unless the EtcdRestore
// says otherwise; revisionBump 0 keeps the backup's revisions.
func TestMembersRaiseTheRevision(t *testing.T) {
	r := &Reconciler{AgentImage: "etcd-operator:dev"}
	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"}, Spec: etcdv1beta2.ClusterSpec{Size: 1, Version: "3.6.16"}}
	src := &source{loc: storage.Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "k", Secret: "aws"}}
	for _, tc := range []struct {
		spec *int64
		want int64
	}{{nil, etcdv1beta2.DefaultRevisionBump}, {ptr.To[int64](0), 0}, {ptr.To[int64](5000), 5000}} {
		rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: "rs-uid"}, Spec: etcdv1beta2.RestoreSpec{RevisionBump: tc.spec}}
		from, err := restoreboot.FromSpec(restoreSource(rs, src))
		if err != nil {
			t.Fatal(err)
		}
		check, err := r.checkPod(rs, c, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range []*corev1.Pod{restoreboot.Pod(c, "db-0", []string{"db-0"}, from, r.AgentImage), check} {
			var cmd []string
			for _, ct := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if ct.Name == restoreboot.InitRestore {
					cmd = ct.Command
				}
			}
			o, err := restoreseed.ParseRestoreArgs(cmd[3:])
			if err != nil {
				t.Fatal(err)
			}
			if o.BumpRevision != tc.want {
				t.Errorf("pod %s, revisionBump %v: the agent raises the revision by %d, want %d", pod.Name, tc.spec, o.BumpRevision, tc.want)
			}
		}
	}
}
