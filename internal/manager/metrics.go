package manager

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-operator/etcd-operator/internal/options"
)

// metricsOptions serves /metrics as plain HTTP, or with --metrics-secure over HTTPS to callers
// the API server authenticates and authorizes (controller-runtime's filter: a TokenReview of the
// bearer token, then a SubjectAccessReview for get on the non-resource URL /metrics).
func metricsOptions(opts *options.Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.CertDir = opts.MetricsCertDir
	}
	return o
}
