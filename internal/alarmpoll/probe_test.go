package alarmpoll

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestHTTPProbe: against a real etcd with a 1 MiB quota, the poller's probe reads no alarm
// from a healthy member's metrics listener, and "ALARM NOSPACE" once writes filled the quota.
func TestHTTPProbe(t *testing.T) {
	metrics := "http://127.0.0.1:" + strconv.Itoa(snapshottest.ReservePort(t))
	e := snapshottest.NewEtcd(t, "m0", nil)
	e.Args = []string{"--quota-backend-bytes=1048576", "--listen-metrics-urls=" + metrics}
	e.Start(t, snapshottest.InitialCluster(e), "new")
	e.WaitReady(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if alarm, err := HTTPProbe(ctx, metrics); err != nil || alarm != "" {
		t.Fatalf("healthy member: alarm %q, error %v", alarm, err)
	}
	cli := e.Client(t)
	value := strings.Repeat("x", 128<<10)
	for i := 0; ; i++ { // the quota holds a few such values; bounded by ctx
		_, err := cli.Put(ctx, "/fill/"+strconv.Itoa(i%4), value)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if alarm, err := HTTPProbe(ctx, metrics); err != nil || alarm != "ALARM NOSPACE" {
		t.Fatalf("member with NOSPACE: alarm %q, error %v, want ALARM NOSPACE", alarm, err)
	}
}
