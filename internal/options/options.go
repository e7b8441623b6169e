// Package options holds the command-line options shared by the three operator binaries:
// AddFlags, then Complete (fill in derived values), then Validate (etcd-druid cmd/opts style).
package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-operator/etcd-operator/internal/storage"
)

// Options configures one operator binary.
type Options struct {
	// Binary is the name of the binary (etcd-operator, backup-operator, restore-operator).
	Binary string

	ShowVersion             bool
	Kubeconfig              string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	MetricsBindAddress      string
	// MetricsSecure serves /metrics over HTTPS to callers the API server authenticates and
	// authorizes (get on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the secure metrics endpoint; empty: a
	// self-signed certificate made at start.
	MetricsCertDir         string
	HealthProbeBindAddress string
	WatchNamespace         string
	// ExcludeNamespace lists, comma-separated, namespaces a cluster-wide operator leaves alone
	// (those of a namespaced install next to it); only without WatchNamespace.
	ExcludeNamespace        string
	MaxConcurrentReconciles int
	// MaxConcurrentBackups bounds the operations that stream a whole snapshot (backups in the
	// backup-operator, backup checks before a restore in the restore-operator) running at
	// once, outside the reconcile workers (internal/workpool).
	MaxConcurrentBackups int
	// MaxConcurrentBackupsPerNamespace bounds how many of those one namespace runs at once, so
	// a tenant whose store stalls holds at most this many workers.
	MaxConcurrentBackupsPerNamespace int
	CreateCRD                        bool
	EtcdDialTimeout                  time.Duration
	EtcdRequestTimeout               time.Duration
	GracefulShutdownTimeout          time.Duration
	// SeedAgentImage is the image with the restore-operator binary that restored members run
	// first (etcd-operator and restore-operator); empty: the operator's own image.
	SeedAgentImage string
	// VolumeServerImage is the image with the backup-operator binary that serves backup
	// PersistentVolumeClaims (backup-operator); empty: the operator's own image.
	VolumeServerImage string
	// AmbientCredentials lists the buckets ("<S3|ABS|GCS>:<bucket glob>") that storage blocks
	// without a credentials Secret may reach with the operator's own cloud identity
	// (backup-operator, restore-operator). Empty: none.
	AmbientCredentials string
	// Ambient is AmbientCredentials parsed (Validate fills it).
	Ambient storage.AmbientPolicy
	// AllowedEtcdEndpoints lists host globs (path.Match, "host" or "host:port") that an
	// EtcdBackup of any namespace may name in etcdEndpoints besides the Services and pods of its
	// own namespace (backup-operator). Empty: none.
	AllowedEtcdEndpoints []string
	// AllowedIssuerKinds lists the issuer kinds ("<group>/<Kind>") that TLS.auto.issuerRef may
	// name besides a cert-manager Issuer of the cluster's own namespace (etcd-operator).
	AllowedIssuerKinds []string

	// HashKVCheckMaxSize is the largest etcd database (bytes, as the member reports it) whose
	// backups the backup-operator checks against the member's HashKV after the upload; 0
	// turns the check off.
	HashKVCheckMaxSize int64

	// KubernetesClusterID names the Kubernetes cluster the operator runs in, for the keys of
	// the backups it writes and the backups it chooses to restore (internal/kubeid). Empty:
	// the kube-system namespace's UID.
	KubernetesClusterID string
	// KubeID is the Kubernetes cluster's identity as backup keys carry it (manager.Run fills
	// it at start); "" when it could not be read.
	KubeID string

	// WatchNamespaces is WatchNamespace split on commas (Complete fills it); empty means all.
	WatchNamespaces []string
	// ExcludeNamespaces is ExcludeNamespace split on commas (Complete fills it).
	ExcludeNamespaces []string

	Zap zap.Options
}

// New returns the defaults for a binary.
func New(binary string) *Options {
	return &Options{
		Binary:                  binary,
		LeaderElectionID:        binary + ".etcd.database.coreos.com",
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		MaxConcurrentReconciles: 2,
		// Four streams of a few MiB of buffers each; two per namespace leave at least half
		// for the others.
		MaxConcurrentBackups:             4,
		MaxConcurrentBackupsPerNamespace: 2,
		EtcdDialTimeout:                  5 * time.Second,
		EtcdRequestTimeout:               15 * time.Second,
		GracefulShutdownTimeout:          30 * time.Second,
		// The check reads the object back into /tmp (an emptyDir of 1Gi, shared by
		// --max-concurrent-backups) and holds ~120 bytes per key while hashing.
		HashKVCheckMaxSize: 128 << 20,
		Zap:                zap.Options{Development: false},
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.ShowVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster service account.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader before reconciling, so that only one replica acts at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the Lease used for leader election (distinct per binary).")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease. Default: the pod's namespace.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve /metrics over HTTPS, only to callers the Kubernetes API server authenticates (TokenReview) and authorizes for get on the non-resource URL /metrics (SubjectAccessReview), e.g. Prometheus bound to the etcd-operator-metrics-reader ClusterRole. The install manifests and the Helm chart turn it on, on :8443.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "With --metrics-secure: directory with tls.crt and tls.key for the metrics endpoint (e.g. from cert-manager). Empty: a self-signed certificate made at start.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz endpoints; \"0\" disables them.")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", o.WatchNamespace, "Comma-separated namespaces to watch. Empty: all namespaces (cluster-wide).")
	fs.StringVar(&o.ExcludeNamespace, "exclude-namespace", o.ExcludeNamespace, "Cluster-wide only: comma-separated namespaces to leave alone, e.g. those a namespaced install of the operators watches. Two operators acting on one EtcdCluster race each other's membership changes and status.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Objects of one kind reconciled in parallel.")
	fs.IntVar(&o.MaxConcurrentBackups, "max-concurrent-backups", o.MaxConcurrentBackups, "backup-operator: backups that run at once; restore-operator: backup checks (the whole object read before a restore) that run at once. They run outside the reconcile workers, namespaces taking turns.")
	fs.IntVar(&o.MaxConcurrentBackupsPerNamespace, "max-concurrent-backups-per-namespace", o.MaxConcurrentBackupsPerNamespace, "Of --max-concurrent-backups, how many one namespace may hold at once (a tenant whose store stalls holds at most these until the backups' deadlines).")
	fs.BoolVar(&o.CreateCRD, "create-crd", o.CreateCRD, "Create or update the operators' CustomResourceDefinitions at start (the coreos/etcd-operator two-step install).")
	fs.DurationVar(&o.EtcdDialTimeout, "etcd-dial-timeout", o.EtcdDialTimeout, "Timeout for connecting to an etcd member.")
	fs.DurationVar(&o.EtcdRequestTimeout, "etcd-request-timeout", o.EtcdRequestTimeout, "Timeout for one etcd request (member list, status, membership change).")
	fs.StringVar(&o.VolumeServerImage, "volume-server-image", o.VolumeServerImage, "backup-operator: image with the backup-operator binary that serves backup PersistentVolumeClaims (storageType PVC). Default: the operator's own image (read from its pod through POD_NAME and POD_NAMESPACE).")
	fs.StringVar(&o.SeedAgentImage, "seed-agent-image", o.SeedAgentImage, "etcd-operator and restore-operator: image with the restore-operator binary that restored members run first to fetch and restore the backup. Default: the operator's own image (read from its pod through POD_NAME and POD_NAMESPACE).")
	fs.StringVar(&o.AmbientCredentials, "ambient-credentials", o.AmbientCredentials, "backup-operator, restore-operator: comma-separated buckets that a storage block without a credentials Secret may reach with the operator's own cloud identity (IRSA, workload identity, instance role), as <S3|ABS|GCS>:<bucket or glob>, e.g. S3:prod-etcd-backups,GCS:team-*. Empty (default): none; such blocks fail with AmbientCredentialsDenied. Never used for a block that names an endpoint.")
	fs.Func("allowed-etcd-endpoints", "backup-operator: comma-separated hosts (or host:port, path.Match globs) that EtcdBackups of every namespace may name in etcdEndpoints, besides Services and pods of their own namespace. Empty (default): none.", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				if _, err := path.Match(h, ""); err != nil {
					return fmt.Errorf("%q: %w", h, err)
				}
				o.AllowedEtcdEndpoints = append(o.AllowedEtcdEndpoints, h)
			}
		}
		return nil
	})
	fs.Func("allowed-issuer-kinds", "etcd-operator: comma-separated issuer kinds, as <group>/<Kind> (e.g. cert-manager.io/ClusterIssuer), that TLS.auto.issuerRef may name besides a cert-manager Issuer in the cluster's own namespace. An issuer shared by namespaces signs a cluster's member names for whoever may request a Certificate from it (docs/security.md). Empty (default): none; such clusters are Degraded with IssuerNotAllowed.", func(v string) error {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				if g, kind, ok := strings.Cut(k, "/"); !ok || g == "" || kind == "" {
					return fmt.Errorf("%q: want <group>/<Kind>, e.g. cert-manager.io/ClusterIssuer", k)
				}
				o.AllowedIssuerKinds = append(o.AllowedIssuerKinds, k)
			}
		}
		return nil
	})
	fs.Func("hashkv-check-max-size", "backup-operator: check every backup of an etcd database up to this size against the source member's HashKV right after the upload (the object is read back into the temp dir and hashed: it needs the database's size in free space per backup running at once, and ~120 bytes of memory per key). A quantity such as 128Mi (default) or 1Gi; 0 turns the check off.", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("%q: want a size such as 128Mi, or 0", v)
		}
		o.HashKVCheckMaxSize = q.Value()
		return nil
	})
	fs.StringVar(&o.KubernetesClusterID, "kubernetes-cluster-id", o.KubernetesClusterID, "A name for the Kubernetes cluster the operator runs in, the same for the three operators of one Kubernetes cluster and different in every other one that may share a backup bucket. The keys of the backups written here carry its hash, and retention and the choice of the newest backup never take another Kubernetes cluster's backups for this one's. Default: the kube-system namespace's UID (the operator needs get on that namespace; without it, and without this flag, keys carry no Kubernetes identity).")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "How long to wait for running reconciles on shutdown.")
	o.Zap.BindFlags(fs)
}

// Complete fills in values derived from the flags and the environment.
func (o *Options) Complete() {
	o.WatchNamespaces = splitList(o.WatchNamespace)
	o.ExcludeNamespaces = splitList(o.ExcludeNamespace)
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if len(o.WatchNamespaces) > 0 && len(o.ExcludeNamespaces) > 0 {
		errs = append(errs, errors.New("--exclude-namespace applies to a cluster-wide operator only: with --watch-namespace, leave the namespace out of that list instead"))
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles))
	}
	if o.MaxConcurrentBackups < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-backups must be at least 1, got %d", o.MaxConcurrentBackups))
	}
	if o.MaxConcurrentBackupsPerNamespace < 1 || o.MaxConcurrentBackupsPerNamespace > o.MaxConcurrentBackups {
		errs = append(errs, fmt.Errorf("--max-concurrent-backups-per-namespace must be between 1 and --max-concurrent-backups (%d), got %d", o.MaxConcurrentBackups, o.MaxConcurrentBackupsPerNamespace))
	}
	if o.EtcdDialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-dial-timeout must be positive, got %s", o.EtcdDialTimeout))
	}
	if o.EtcdRequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-request-timeout must be positive, got %s", o.EtcdRequestTimeout))
	}
	if o.LeaderElect && o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty with --leader-elect"))
	}
	ambient, err := storage.ParseAmbientPolicy(strings.Split(o.AmbientCredentials, ","))
	if err != nil {
		errs = append(errs, fmt.Errorf("--ambient-credentials: %w", err))
	}
	o.Ambient = ambient
	return errors.Join(errs...)
}

// String renders the effective configuration for the start-up log.
func (o *Options) String() string {
	return fmt.Sprintf("leaderElect=%t leaderElectionID=%s leaderElectionNamespace=%q metrics=%s metricsSecure=%t health=%s watchNamespaces=%v excludeNamespaces=%v maxConcurrentReconciles=%d maxConcurrentBackups=%d/%d per namespace createCRD=%t etcdDialTimeout=%s etcdRequestTimeout=%s ambientCredentials=%q",
		o.LeaderElect, o.LeaderElectionID, o.LeaderElectionNamespace, o.MetricsBindAddress, o.MetricsSecure, o.HealthProbeBindAddress,
		o.WatchNamespaces, o.ExcludeNamespaces, o.MaxConcurrentReconciles, o.MaxConcurrentBackups, o.MaxConcurrentBackupsPerNamespace, o.CreateCRD, o.EtcdDialTimeout, o.EtcdRequestTimeout, o.AmbientCredentials)
}
