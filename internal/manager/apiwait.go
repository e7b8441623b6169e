package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// An operator that starts while the API server is down (a control-plane restart, which also
// ends its leadership and so its previous process) waits for it here instead of exiting:
// an exit puts the container in CrashLoopBackOff, whose growing delay (10 s, 20 s, ... 5 min)
// would keep every cluster unreconciled long after the API server is back (the chaos kind
// apiserver-restarted measured 62 s to heal with exits). The wait is bounded below the
// Deployment's liveness probe (5 s + 3 x 20 s), which cannot answer before the manager runs.
const (
	apiServerWait      = 50 * time.Second
	apiServerPoll      = time.Second
	apiServerLogPeriod = 10 * time.Second
)

// waitForAPIServer polls the API server's /version until it answers, ctx ends or wait passes.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, log logr.Logger, wait, poll time.Duration) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	start := time.Now()
	var lastLog time.Time
	for {
		_, err := dc.ServerVersion()
		if err == nil {
			if waited := time.Since(start); waited > poll {
				log.Info("API server reachable", "waited", waited.Round(100*time.Millisecond).String())
			}
			return nil
		}
		if time.Since(start) >= wait {
			return fmt.Errorf("API server not reachable after %s: %w", wait, err)
		}
		if time.Since(lastLog) >= apiServerLogPeriod {
			log.Info("Waiting for the API server", "error", err.Error())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
