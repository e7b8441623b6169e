package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubesecret"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

// Secrets reads the data of a Secret a Location names. A missing one is a SecretNotFound
// failure.
type Secrets interface {
	Data(ctx context.Context, name string) (map[string][]byte, error)
}

// APISecrets reads Secrets of Namespace from the API server: what the operators use.
type APISecrets struct {
	Reader    client.Reader
	Namespace string
}

// Data implements Secrets.
func (s APISecrets) Data(ctx context.Context, name string) (map[string][]byte, error) {
	return kubesecret.Data(ctx, s.Reader, s.Namespace, name)
}

// DirSecrets reads Secrets mounted as volumes at Root/<name> (see PodSecrets): what the seed
// agent uses, so the credentials never pass through a flag or an environment variable.
type DirSecrets struct{ Root string }

// Data implements Secrets.
func (s DirSecrets) Data(_ context.Context, name string) (map[string][]byte, error) {
	dir := filepath.Join(s.Root, name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s is not mounted at %s", name, dir)
		}
		return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "reading secret %s at %s: %w", name, dir, err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		// A mounted Secret holds its keys as symlinks to ..data/<key>; skip the ..* entries.
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, syscall.EISDIR) {
			continue
		}
		if err != nil {
			return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "reading secret %s key %s: %w", name, e.Name(), err)
		}
		data[e.Name()] = b
	}
	if len(data) == 0 {
		// PodSecrets mounts Secrets as optional: one that does not exist is an empty directory.
		return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s does not exist or is empty (mounted at %s)", name, dir)
	}
	return data, nil
}

// Config is the provider configuration of l: its credentials Secret's data (none: ambient
// credentials) and its CA bundle. A CA Secret without the key is an InvalidSpec failure.
func (l Location) Config(ctx context.Context, secrets Secrets) (factory.Config, error) {
	cfg := factory.Config{
		Type:           factory.Type(l.Type),
		Bucket:         l.Bucket,
		Endpoint:       l.Endpoint,
		ForcePathStyle: l.ForcePathStyle,
	}
	if l.Secret != "" {
		data, err := secrets.Data(ctx, l.Secret)
		if err != nil {
			return factory.Config{}, err
		}
		cfg.Secret = data
	}
	if l.CA != nil {
		data, err := secrets.Data(ctx, l.CA.Name)
		if err != nil {
			return factory.Config{}, err
		}
		if cfg.CABundle = data[l.CA.Key]; len(cfg.CABundle) == 0 {
			return factory.Config{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "endpointCA: secret %s has no key %q", l.CA.Name, l.CA.Key)
		}
	}
	return cfg, nil
}

// Store is an opened object store and the Location it was opened for.
type Store struct {
	backend.Backend
	Location
}

// URLOf is the status URL of key in the store.
func (s *Store) URLOf(key string) string { return s.WithKey(key).URL() }

// Open reaches the store of l with its credentials and CA bundle from secrets; without a
// credentials Secret, only where ambient allows the ambient identity. It makes no network
// request. Errors carry a reason: AmbientCredentialsDenied, SecretNotFound, InvalidSpec, or
// InvalidCredentials for credentials or a CA bundle the provider cannot use.
func Open(ctx context.Context, l Location, secrets Secrets, ambient AmbientPolicy) (*Store, error) {
	if err := ambient.Check(l); err != nil {
		return nil, err
	}
	cfg, err := l.Config(ctx, secrets)
	if err != nil {
		return nil, err
	}
	b, err := factory.New(ctx, cfg)
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonInvalidCredentials, "configuring %s storage with secret %q: %w", l.Type, l.Secret, err)
	}
	return &Store{Backend: b, Location: l}, nil
}
