package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// openStore opens the storage of loc as the user. A PersistentVolumeClaim's server
// (storageType PVC) is reached through the API server, as `kubectl port-forward` does, to its
// pod; the certificate is still checked against the one in the server's Secret, so the tunnel
// sees only TLS. The returned stop ends the tunnel.
func (a *App) openStore(ctx context.Context, c client.Reader, ns string, loc storage.Location, policy storage.AmbientPolicy) (*storage.Store, func(), error) {
	secrets := storage.Secrets(storage.APISecrets{Reader: c, Namespace: ns})
	stop := func() {}
	if loc.Type == etcdv1beta2.BackupStorageTypePVC {
		addr, end, err := a.forward(ctx, ns, backupvolume.Name(loc.Bucket))
		if err != nil {
			return nil, nil, fmt.Errorf("reaching the volume server of claim %s (it runs while a schedule, a periodic or unfinished backup, or a restore names the claim): %w", loc.Bucket, err)
		}
		secrets, stop = tunnelled{secrets, loc.Secret, addr}, end
	}
	store, err := storage.Open(ctx, loc, secrets, policy)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return store, stop, nil
}

// tunnelled adds the tunnel's local address to the server's Secret data (volume.SecretDialKey).
type tunnelled struct {
	storage.Secrets
	server, addr string
}

func (t tunnelled) Data(ctx context.Context, name string) (map[string][]byte, error) {
	data, err := t.Secrets.Data(ctx, name)
	if err != nil || name != t.server {
		return data, err
	}
	data[volume.SecretDialKey] = []byte(t.addr)
	return data, nil
}

// forward opens a port-forward to port backupvolume.Port of pod ns/pod on a free local port
// and returns its address and the function that closes it.
func (a *App) forward(ctx context.Context, ns, pod string) (string, func(), error) {
	cfg, _, err := a.kube.config()
	if err != nil {
		return "", nil, err
	}
	tr, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return "", nil, err
	}
	host, err := url.Parse(cfg.Host)
	if err != nil {
		return "", nil, err
	}
	host.Path = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/portforward", host.Path, ns, pod)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, host)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", backupvolume.Port)}, stopCh, ready, io.Discard, a.Err)
	if err != nil {
		return "", nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return "", nil, err
	case <-ctx.Done():
		close(stopCh)
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stopCh)
		return "", nil, fmt.Errorf("port-forward to pod %s: no local port: %w", pod, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() { close(stopCh) }, nil
}
