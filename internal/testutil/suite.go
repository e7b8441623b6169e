package testutil

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/internal/manager"
)

// RunManagerSuite is the body of a controller package's TestMain: it starts envtest and a
// manager with the project's scheme (metrics off), lets setup register the controllers under
// test (and start helpers with ctx), starts the manager, runs the tests and returns their exit
// code. Controller logs go to stderr only with TEST_VERBOSE_LOGS set.
func RunManagerSuite(m *testing.M, setup func(ctx context.Context, env *Env, mgr ctrl.Manager) error) int {
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	env, err := StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	// The operators' client options: Secrets read from the API server, as in production. With
	// them cached, a backup created right after its Secret could fail with SecretNotFound
	// before the cache saw the Secret (docs/flakes.md, 2026-11-30).
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: manager.NewScheme(), Client: manager.ClientOptions(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setup(ctx, env, mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}
