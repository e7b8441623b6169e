//go:build e2e && chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// withCorruptionCheck: volumes, and etcd's corruption checks every 5 s.
func withCorruptionCheck(c *etcdv1beta2.EtcdCluster) {
	withVolumes(c)
	c.Spec.MemberReplacement = &etcdv1beta2.MemberReplacementSpec{CorruptionCheckSeconds: ptr.To[int32](5)}
}

// memberDataAltered alters the newest value a random member (the leader included) has
// committed to its file while its pod is down (framework.AlterMember): the member comes back
// and serves, etcd's corruption check raises CORRUPT, which stops writes, and the operator
// must replace that member, and no other, and clear the alarm. The kind waits for that itself:
// the cluster is at its size again the moment the pod is back, before anything is found.
func memberDataAltered(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	pods := memberPods(t, f, ns)
	victim := pods[rng.IntN(len(pods))].Name
	f.AlterMember(t, ns, "c", victim)
	back := time.Now()
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	framework.Eventually(t, healTimeout, victim+" replaced, no alarm, writes accepted", func(ctx context.Context) (bool, error) {
		c := &etcdv1beta2.EtcdCluster{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, c); err != nil {
			return false, err
		}
		var replaced []string
		for _, v := range c.Status.ReplacedVolumes {
			replaced = append(replaced, v.Name)
		}
		if !slices.Equal(replaced, []string{victim}) {
			return false, fmt.Errorf("replaced volumes %v, want [%s]", replaced, victim)
		}
		alarms, err := cli.AlarmList(ctx)
		if err != nil {
			return false, err
		}
		if len(alarms.Alarms) > 0 {
			return false, fmt.Errorf("alarms %v", alarms.Alarms)
		}
		_, err = cli.Put(ctx, "/altered/after", "ok")
		return err == nil, err
	})
	return injected{size: 3, over: back, note: fmt.Sprintf("%s's newest value altered; replaced and writes accepted %s after its pod came back", victim, time.Since(back).Round(100*time.Millisecond))}
}
