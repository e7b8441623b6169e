package member

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func TestMaintenanceFlags(t *testing.T) {
	q := resource.MustParse("4Gi")
	for _, tc := range []struct {
		name        string
		maintenance *etcdv1beta2.MaintenanceSpec
		env         []corev1.EnvVar
		want        []string
	}{
		{name: "defaults", want: []string{"--auto-compaction-mode=periodic", "--auto-compaction-retention=1h"}},
		{name: "quota in bytes, revision compaction",
			maintenance: &etcdv1beta2.MaintenanceSpec{QuotaBackendBytes: &q, AutoCompaction: &etcdv1beta2.AutoCompactionSpec{Mode: etcdv1beta2.AutoCompactionRevision, Retention: "10000"}},
			want:        []string{"--quota-backend-bytes=4294967296", "--auto-compaction-mode=revision", "--auto-compaction-retention=10000"}},
		{name: "coreos manifest: the variables stay, no flag for them",
			env:  []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}, {Name: "ETCD_AUTO_COMPACTION_RETENTION", Value: "0"}},
			want: nil},
		{name: "quota variable, compaction by default",
			env:  []corev1.EnvVar{{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"}},
			want: []string{"--auto-compaction-mode=periodic", "--auto-compaction-retention=1h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			c.Spec.Maintenance = tc.maintenance
			c.Spec.Pod = &etcdv1beta2.PodPolicy{EtcdEnv: tc.env}
			var got []string
			for _, arg := range NewPod(c, "c-0", "3.6.16", "new", "c-0=http://c-0:2380").Spec.Containers[0].Command {
				if strings.HasPrefix(arg, "--quota") || strings.HasPrefix(arg, "--auto-compaction") {
					got = append(got, arg)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("flags %v, want %v", got, tc.want)
			}
		})
	}
}
