// Package manager builds and runs the controller-runtime manager every operator binary shares:
// options -> complete -> validate -> log version and config -> setup -> start (cluster-api
// main.go shape), so that each cmd/*/main.go stays a few lines long.
package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/kubeid"
	"github.com/etcd-operator/etcd-operator/internal/opmetrics"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/version"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// Every binary elects a leader, records events and may install its CRDs.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// The kube-system namespace only, for the Kubernetes cluster's identity in backup keys (internal/kubeid).
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get
// With --metrics-secure, every binary asks the API server who calls /metrics and whether they may.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupFunc registers one controller with the manager.
type SetupFunc func(mgr ctrl.Manager, opts *options.Options) error

// NewScheme returns a scheme with the Kubernetes built-in kinds, CRDs and this project's kinds.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(etcdv1beta2.AddToScheme(s))
	return s
}

// Main parses args for the named binary, runs it until SIGTERM or SIGINT, and returns the exit
// code: 0 after a clean shutdown, 1 on a runtime error, 2 on invalid flags.
func Main(binary string, args []string, setups ...SetupFunc) int {
	opts := options.New(binary)
	fs := flag.NewFlagSet(binary, flag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if opts.ShowVersion {
		fmt.Println(version.String(binary))
		return 0
	}
	opts.Complete()
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: invalid flags: %v\n", binary, err)
		return 2
	}
	SetupLogging(&opts.Zap, os.Stderr)
	log := ctrl.Log.WithName(binary)
	log.Info("Starting", "version", version.String(binary), "config", opts.String())

	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		log.Error(err, "Cannot reach the Kubernetes API")
		return 1
	}
	if err := Run(ctrl.SetupSignalHandler(), cfg, opts, setups...); err != nil {
		log.Error(err, "Operator stopped with an error")
		return 1
	}
	log.Info("Stopped")
	return 0
}

// restConfig loads the client configuration from path, or the default loading rules if empty.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// Run builds the manager for cfg, installs the CRDs if asked, registers the controllers and
// blocks until ctx is cancelled.
func Run(ctx context.Context, cfg *rest.Config, opts *options.Options, setups ...SetupFunc) error {
	scheme := NewScheme()
	if err := waitForAPIServer(ctx, cfg, ctrl.Log.WithName(opts.Binary), apiServerWait, apiServerPoll); err != nil {
		return err
	}
	if opts.CreateCRD {
		if err := InstallCRDs(ctx, cfg, scheme); err != nil {
			return err
		}
	}
	cacheOpts := cacheOptions(opts.WatchNamespaces, opts.ExcludeNamespaces)
	shutdown := opts.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Client:                        ClientOptions(),
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// The Kubernetes cluster's identity, which the keys of backups record, read once: the
	// kube-system namespace's UID does not change while the cluster exists.
	if opts.KubeID, err = kubeid.Lookup(ctx, mgr.GetAPIReader(), opts.KubernetesClusterID); err != nil {
		return err
	}
	ctrl.Log.WithName(opts.Binary).Info("Kubernetes cluster identity for backup keys", "kubeID", opts.KubeID,
		"from", map[bool]string{true: "--kubernetes-cluster-id", false: "the kube-system namespace (empty: not readable)"}[opts.KubernetesClusterID != ""])
	// The build of this binary; each binary's controllers register their own metrics in
	// their setup (SetupMetrics), so /metrics carries exactly the binary's metrics.
	if err := opmetrics.Register(metrics.Registry, opmetrics.NewBuildInfo(opts.Binary)); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	for _, setup := range setups {
		if err := setup(mgr, opts); err != nil {
			return err
		}
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// ClientOptions are the options of the managers' client: Secrets are read from the API server,
// never cached, so a Secret created together with the object that names it is found at once (a
// cache that has not seen it yet would fail a backup for good with SecretNotFound), and no
// operator holds every Secret of the cluster in memory. The controllers' test suites use them
// too (testutil.RunManagerSuite).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}
