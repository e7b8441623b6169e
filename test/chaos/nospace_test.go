//go:build e2e && chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The NOSPACE kind's backend quota and the writes that fill it. The load's own keys are all
// live data, which no compaction frees, so they stay well under the quota (bbolt grows its file
// in steps of up to 16 MiB, and the operator clears the alarm only once every member's file
// is under 90% of the quota); a filler overwriting a few keys with big values fills the quota
// with history, which the operator's compaction and defragmentation give back.
const (
	noSpaceQuota     = "64Mi"
	fillerKeys       = 4
	fillerValueSize  = 512 << 10
	maxFillerWrites  = 400 // the quota holds about 128 such values
	maxFillerTime    = 2 * time.Minute
	fillerPutTimeout = 10 * time.Second
)

// withQuota gives the cluster the small backend quota of the NOSPACE kind.
func withQuota(c *etcdv1beta2.EtcdCluster) {
	q := resource.MustParse(noSpaceQuota)
	c.Spec.Maintenance = &etcdv1beta2.MaintenanceSpec{QuotaBackendBytes: &q}
}

// noSpaceUnderLoad writes big values over a few keys, beside the load, until etcd refuses
// writes with NOSPACE. The operator must notice the alarm by itself, compact, defragment every
// member and clear it: heal counts from the first NOSPACE until writes are accepted again and
// no alarm is left.
func noSpaceUnderLoad(t *testing.T, f *framework.Framework, ns string, rng *rand.Rand) injected {
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "c"))
	value := strings.Repeat(string("abcdefghijklmnopqrstuvwxyz"[rng.IntN(26)]), fillerValueSize)
	start := time.Now()
	var full time.Time
	writes := 0
	for i := 0; i < maxFillerWrites && time.Since(start) < maxFillerTime && full.IsZero(); i++ {
		ctx, cancel := context.WithTimeout(t.Context(), fillerPutTimeout)
		_, err := cli.Put(ctx, fmt.Sprintf("/nospace/%d", i%fillerKeys), value)
		cancel()
		switch {
		case err == nil:
			writes++
		case errors.Is(err, rpctypes.ErrNoSpace):
			full = time.Now()
		default:
			t.Logf("filler put: %v (not acknowledged)", err)
		}
	}
	if full.IsZero() {
		t.Fatalf("etcd never refused a write with NOSPACE (%d big values written in %s)", writes, time.Since(start).Round(time.Second))
	}
	t.Logf("fault: NOSPACE after %d big values in %s", writes, full.Sub(start).Round(100*time.Millisecond))
	framework.Eventually(t, healTimeout, "no alarm, and writes accepted again", func(ctx context.Context) (bool, error) {
		alarms, err := cli.AlarmList(ctx)
		if err != nil {
			return false, err
		}
		if len(alarms.Alarms) > 0 {
			return false, fmt.Errorf("alarms %v", alarms.Alarms)
		}
		_, err = cli.Put(ctx, "/nospace/after", "ok")
		return err == nil, err
	})
	return injected{size: 3, over: full, note: fmt.Sprintf("NOSPACE after %d big values in %s; writes accepted again %s later",
		writes, full.Sub(start).Round(100*time.Millisecond), time.Since(full).Round(100*time.Millisecond))}
}
