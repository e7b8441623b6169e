package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// TestCorruptAlarmReplacesProvenMember: with spec.memberReplacement.corruptionCheckSeconds the
// members run etcd's corruption checks. A CORRUPT alarm while every member has the same hash
// proves nothing: it is reported (Degraded AlarmRaised, with the hashes) and nothing changes.
// Once one member's hash differs from the other two, that member is replaced (whichever member
// the alarm names: etcd's periodic check can blame a healthy follower), its volume kept, the
// alarm cleared, the other members' pods and volumes untouched.
func TestCorruptAlarmReplacesProvenMember(t *testing.T) {
	ctx := context.Background()
	ns, f := grownWithReplacement(t, "corrupt", etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](30)})
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-0"}, pod); err != nil {
		t.Fatal(err)
	}
	if cmd := strings.Join(pod.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "--corrupt-check-time=30s") || !strings.Contains(cmd, "--feature-gates=CompactHashCheck=true") {
		t.Fatalf("c-0 runs %q: want etcd's corruption checks on", cmd)
	}
	before := map[string]types.UID{}
	for _, name := range []string{"c-0", "c-1"} {
		before["pod/"+name] = uidOf(t, ns, name, &corev1.Pod{})
		before["pvc/"+name] = uidOf(t, ns, name, &corev1.PersistentVolumeClaim{})
	}
	ids := map[string]uint64{}
	for _, m := range f.list() {
		ids[m.Name] = m.ID
	}

	// The alarm names c-1, and every member has the same hash: nothing is proven.
	f.set(func(f *fakeEtcd) { f.alarms = []cluster.Alarm{{MemberID: ids["c-1"], Type: cluster.AlarmCorrupt}} })
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "the unproven alarm reported", testutil.NoError(func() error {
		cur := getCluster(t, ns, "c")
		d := meta.FindStatusCondition(cur.Status.Conditions, etcdv1beta2.ClusterConditionDegraded)
		if d == nil || d.Reason != etcdv1beta2.ReasonAlarmRaised || !strings.Contains(d.Message, "none is proven corrupt") {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	}))
	if got := memberNames(f, true); !slices.Equal(got, []string{"c-0", "c-1", "c-2"}) {
		t.Fatalf("voters %v after an unproven alarm: want nothing replaced", got)
	}

	// c-2's hash differs from the other two: c-2 is replaced, the alarm naming c-1 cleared.
	f.set(func(f *fakeEtcd) { f.hashes = map[string]uint32{"c-2": 9} })
	touch(t, ns)
	testutil.Eventually(t, testutil.Timeout, "c-2 replaced and the alarm cleared", testutil.NoError(func() error {
		var alarms []cluster.Alarm
		f.set(func(f *fakeEtcd) { alarms = f.alarms })
		if got := memberNames(f, true); !slices.Equal(got, []string{"c-0", "c-1", "c-3"}) || len(alarms) != 0 {
			return fmt.Errorf("voters %v, alarms %v", got, alarms)
		}
		return nil
	}))
	kept := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-2"}, kept); err != nil || kept.DeletionTimestamp != nil ||
		kept.Annotations[etcdv1beta2.AnnotationReplacedMemberID] != fmt.Sprintf("%x", ids["c-2"]) {
		t.Fatalf("the corrupt member's volume: %v, annotations %v; want it kept and marked", err, kept.Annotations)
	}
	for key, uid := range before {
		kind, name, _ := strings.Cut(key, "/")
		var obj client.Object = &corev1.Pod{}
		if kind == "pvc" {
			obj = &corev1.PersistentVolumeClaim{}
		}
		if got := uidOf(t, ns, name, obj); got != uid {
			t.Fatalf("%s was replaced (uid %s, was %s): only c-2 may be", key, got, uid)
		}
	}
	testutil.Eventually(t, testutil.Timeout, "one MemberReplaced warning", testutil.NoError(func() error {
		return warningEvents(ns, etcdv1beta2.ReasonMemberReplaced, 1)
	}))
}
