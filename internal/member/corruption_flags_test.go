package member

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestCorruptionFlagsStartEtcd: the corruption-check flags each version gets are ones that
// release takes (a real member starts with them; an unknown flag makes etcd exit), and none
// are given without spec.memberReplacement.corruptionCheckSeconds.
func TestCorruptionFlagsStartEtcd(t *testing.T) {
	c := &etcdv1beta2.EtcdCluster{Spec: etcdv1beta2.ClusterSpec{MemberReplacement: &etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](90)}}}
	if got := corruptionFlags(&etcdv1beta2.EtcdCluster{}, "3.6.16"); got != nil {
		t.Fatalf("flags without the field: %v", got)
	}
	if got := corruptionFlags(c, "3.5.4"); !slices.Equal(got, []string{"--experimental-corrupt-check-time=90s"}) {
		t.Fatalf("3.5.4 (before the compact hash check): %v", got)
	}
	for _, version := range []string{snapshottest.Version, snapshottest.OldVersion} {
		t.Run(version, func(t *testing.T) {
			flags := corruptionFlags(c, strings.TrimPrefix(version, "v"))
			if len(flags) != 2 || !strings.Contains(flags[0], "corrupt-check-time=90s") {
				t.Fatalf("flags %v: want the periodic and the compact hash check", flags)
			}
			e := snapshottest.NewEtcd(t, "m", nil)
			e.Dir = snapshottest.BinDirOf(version)
			e.Args = flags
			e.Start(t, snapshottest.InitialCluster(e), "new")
			e.WaitReady(t)
		})
	}
}
