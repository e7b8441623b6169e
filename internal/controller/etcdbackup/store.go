package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

// Store is an opened object store with the bucket and key (or key prefix) of a backup spec.
type Store struct {
	backend.Backend
	Type   etcdv1beta2.BackupStorageType
	Bucket string
	// Key is the object key of a Key-path backup, or the key prefix of a Prefix-path one.
	Key string
}

// Location returns the status location of key: <storageType>://<bucket>/<key>.
func (s *Store) Location(key string) string {
	return fmt.Sprintf("%s://%s/%s", s.Type, s.Bucket, key)
}

// ParseLocation splits a location written by Store.Location into storage type, bucket and key.
func ParseLocation(loc string) (etcdv1beta2.BackupStorageType, string, string, bool) {
	typ, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return "", "", "", false
	}
	bucket, key, ok := strings.Cut(rest, "/")
	return etcdv1beta2.BackupStorageType(typ), bucket, key, ok && bucket != "" && key != ""
}

// reasonError carries the condition reason of a failure and whether it is worth retrying.
type reasonError struct {
	reason    string
	transient bool
	err       error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

func terminal(reason string, err error) error { return &reasonError{reason: reason, err: err} }

// metrics of every backend the operator opens, registered once.
var backendMetrics *backend.Metrics

// OpenStore builds the backend a backup spec names, with the credentials Secret (coreos
// formats) from namespace ns. Errors carry a condition reason (SecretNotFound,
// InvalidCredentials, InvalidSpec).
func OpenStore(ctx context.Context, c client.Reader, ns string, spec *etcdv1beta2.BackupSpec) (*Store, error) {
	cfg := factory.Config{Type: factory.Type(spec.StorageType)}
	var secretName string
	switch spec.StorageType {
	case etcdv1beta2.BackupStorageTypeS3:
		if spec.S3 != nil {
			secretName, cfg.Endpoint, cfg.ForcePathStyle = spec.S3.AWSSecret, spec.S3.Endpoint, spec.S3.ForcePathStyle
		}
	case etcdv1beta2.BackupStorageTypeABS:
		if spec.ABS != nil {
			secretName, cfg.Endpoint = spec.ABS.ABSSecret, spec.ABS.Endpoint
		}
	case etcdv1beta2.BackupStorageTypeGCS:
		if spec.GCS != nil {
			secretName, cfg.Endpoint = spec.GCS.GCPSecret, spec.GCS.Endpoint
		}
	}
	bucket, key, err := factory.SplitPath(spec.StoragePath())
	if err != nil {
		return nil, terminal(etcdv1beta2.ReasonInvalidSpec, fmt.Errorf("storage %s: %w", spec.StorageType, err))
	}
	cfg.Bucket = bucket
	if secretName != "" {
		data, err := secretData(ctx, c, ns, secretName)
		if err != nil {
			return nil, err
		}
		cfg.Secret = data
	}
	b, err := factory.New(ctx, cfg)
	if err != nil {
		return nil, terminal(etcdv1beta2.ReasonInvalidCredentials, fmt.Errorf("configuring %s storage with secret %q: %w", spec.StorageType, secretName, err))
	}
	if backendMetrics != nil {
		b = backendMetrics.Wrap(b, strings.ToLower(string(spec.StorageType)))
	}
	return &Store{Backend: b, Type: spec.StorageType, Bucket: bucket, Key: key}, nil
}

// secretData reads a Secret's data; a missing Secret is a SecretNotFound failure.
func secretData(ctx context.Context, c client.Reader, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, terminal(etcdv1beta2.ReasonSecretNotFound, fmt.Errorf("secret %s/%s not found", ns, name))
		}
		return nil, fmt.Errorf("getting secret %s/%s: %w", ns, name, err)
	}
	return s.Data, nil
}

// ErrorReason returns the condition reason an OpenStore error carries (SecretNotFound,
// InvalidCredentials, InvalidSpec), or "" for an error without one.
func ErrorReason(err error) string {
	if re, ok := errors.AsType[*reasonError](err); ok {
		return re.reason
	}
	return ""
}
