package backuptarget

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// backendMetrics counts the requests of every store opened after InstrumentStores.
var backendMetrics *backend.Metrics

// InstrumentStores makes OpenStore count the requests of the stores it opens from now on in m
// (registered once per binary, by the EtcdBackup controller's metrics).
func InstrumentStores(m *backend.Metrics) { backendMetrics = m }

// OpenStore opens the store a backup spec names, with its Secrets from namespace ns (ambient
// credentials only as ambient allows), and counts its requests in the backend metrics. Errors
// carry a reason (see storage.Open).
func OpenStore(ctx context.Context, c client.Reader, ns string, spec *etcdv1beta2.BackupSpec, ambient storage.AmbientPolicy) (*storage.Store, error) {
	loc, err := storage.FromSpec(spec)
	if err != nil {
		return nil, err
	}
	store, err := storage.Open(ctx, loc, storage.APISecrets{Reader: c, Namespace: ns}, ambient)
	if err != nil {
		return nil, err
	}
	if backendMetrics != nil {
		store.Backend = backendMetrics.Wrap(store.Backend, strings.ToLower(string(loc.Type)))
	}
	return store, nil
}
