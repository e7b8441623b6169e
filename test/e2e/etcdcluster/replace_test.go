//go:build e2e

package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestCorruptMemberReplaced: a member's data damaged on disk while its pod is down, under a
// writer, in two ways:
//   - unreadable: garbage written over its bbolt db (framework.CorruptMember); etcd refuses the
//     data, its pod crash-loops, and after spec.memberReplacement.afterSeconds the operator
//     replaces it;
//   - differs: the newest value in its db altered, the file left valid
//     (framework.AlterMember); the member serves, etcd's corruption check
//     (corruptionCheckSeconds) raises CORRUPT, and the operator proves the member by its hash
//     and replaces it, then clears the alarm.
//
// Either way a fresh member on a fresh volume takes its place, the other two members are
// untouched (same pods, no restart), the damaged volume is kept and listed, every acknowledged
// write is there, and every member serves the same keys.
func TestCorruptMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	cases := []struct {
		name, how string
		spec      etcdv1beta2.MemberReplacementSpec
		damage    func(t testing.TB, ns, name, pod string)
		// cleared: a CORRUPT alarm was raised and is cleared (event AlarmCleared).
		cleared bool
	}{
		{"unreadable", "afterSeconds 30", etcdv1beta2.MemberReplacementSpec{AfterSeconds: ptr.To[int32](30)}, f.CorruptMember, false},
		{"differs", "corruptionCheckSeconds 5", etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](5)}, f.AlterMember, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := f.CreateNamespace(t, "etcd-corrupt-"+tc.name)
			c := onVolumes(newCluster(ns, "c", 3))
			c.Spec.MemberReplacement = &tc.spec
			f.Create(t, c)
			waitAvailable(t, f, ns, "c", 3, 5*time.Minute)
			cli := etcdClient(t, f, nil, clientEndpoint(ns, "c"))
			writer := framework.StartWriter(cli, "/corrupt/")

			// The victim: a follower, so that the writer sees no election.
			victim := ""
			for _, d := range getCluster(t, f, ns, "c").Status.Members.Details {
				if d.Role != etcdv1beta2.MemberRoleLeader && victim == "" {
					victim = d.Name
				}
			}
			before := map[string]types.UID{}
			restarts := map[string]int32{}
			for _, p := range memberPods(t, f, ns, "c") {
				before[p.Name] = p.UID
				restarts[p.Name] = restartCount(&p)
			}
			tc.damage(t, ns, "c", victim)
			start := time.Now()

			framework.Eventually(t, 5*time.Minute, "the damaged member replaced", func(ctx context.Context) (bool, error) {
				cur := getCluster(t, f, ns, "c")
				pods := memberPods(t, f, ns, "c")
				names := make([]string, 0, len(pods))
				for _, p := range pods {
					names = append(names, p.Name)
				}
				return !slices.Contains(names, victim) && len(pods) == 3 && condition(cur, "Ready") == "True/ClusterHealthy" && len(cur.Status.ReplacedVolumes) == 1,
					fmt.Errorf("pods %v, Ready %s, Degraded %s, Progressing %s, replaced volumes %+v", names, condition(cur, "Ready"), condition(cur, "Degraded"), condition(cur, "Progressing"), cur.Status.ReplacedVolumes)
			})
			took := time.Since(start)
			writer.Finish(t)
			put(t, cli, "/after-replacement", "ok")
			checkMembers(t, f, nil, "http", ns, "c", 3, "/after-replacement", "ok")

			cur := getCluster(t, f, ns, "c")
			if rv := cur.Status.ReplacedVolumes[0]; rv.Name != victim || rv.MemberID == "" || rv.DeleteAfter != nil {
				t.Errorf("status.replacedVolumes %+v: want %s, kept", rv, victim)
			}
			kept := &corev1.PersistentVolumeClaim{}
			if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim}, kept); err != nil || kept.DeletionTimestamp != nil {
				t.Errorf("the damaged member's volume %s: %v (deleting %v); want it kept", victim, err, kept.DeletionTimestamp)
			}
			for _, p := range memberPods(t, f, ns, "c") {
				if uid, ok := before[p.Name]; ok && (uid != p.UID || restartCount(&p) != restarts[p.Name]) {
					t.Errorf("member %s was touched: uid %s (was %s), restarts %d (were %d)", p.Name, p.UID, uid, restartCount(&p), restarts[p.Name])
				}
			}
			if n := countEvents(t, f, ns, etcdv1beta2.ReasonMemberReplaced); n != 1 {
				t.Errorf("%d MemberReplaced events, want 1", n)
			}
			if n := countEvents(t, f, ns, "AlarmCleared"); (n > 0) != tc.cleared {
				t.Errorf("%d AlarmCleared events; want a CORRUPT alarm cleared: %t", n, tc.cleared)
			}
			t.Logf("MEASURE %s member %s replaced and the cluster Ready with 3 members %s after its pod came back (%s)", tc.name, victim, took.Round(100*time.Millisecond), tc.how)
		})
	}
}

func restartCount(p *corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "etcd" {
			return s.RestartCount
		}
	}
	return 0
}
