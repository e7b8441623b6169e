// Package factory builds any backend provider from one small typed Config, with a plain switch.
// It is the only package that imports every provider; controllers depend on it and on the
// backend interface, not on the providers.
package factory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/abs"
	"github.com/etcd-operator/etcd-operator/pkg/backend/gcs"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
)

// Type names a provider. S3, ABS, GCS and OSS are the coreos API's storage type values; OSS is
// the S3 provider configured for Alibaba Cloud OSS (oss.go).
type Type string

// Provider types.
const (
	S3  Type = "S3"
	ABS Type = "ABS"
	GCS Type = "GCS"
	OSS Type = "OSS"
	// PVC is a volume server (pkg/backend/volume) on a PersistentVolumeClaim; Secret is the
	// server's Secret data (URL, token, certificate).
	PVC    Type = "PVC"
	Local  Type = "Local"
	Memory Type = "Memory"
)

// Config selects and configures a provider. Fields that do not apply to Type are ignored.
type Config struct {
	// Type is the provider.
	Type Type
	// Bucket is the S3, GCS or OSS bucket, the ABS container, or the Local directory.
	Bucket string
	// Prefix, when set, places every key under Prefix + "/" (backend.WithPrefix).
	Prefix string
	// Secret is the data of the provider's coreos secret: awsSecret (S3), absSecret (ABS),
	// gcpSecret (GCS) or ossSecret (OSS). Nil uses the SDK's ambient credentials (OSS: an error).
	Secret map[string][]byte
	// Endpoint is a custom endpoint: an S3-compatible store, a GCS JSON API endpoint (emulator),
	// an Azure blob service URL, or an OSS region endpoint (ResolveOSSEndpoint).
	Endpoint string
	// Region is the S3 region; it overrides the region in the awsSecret's config file, or the
	// one an OSS endpoint names.
	Region string
	// ForcePathStyle selects path-style S3 addressing (MinIO and most S3-compatible stores).
	ForcePathStyle bool
	// Account is the Azure storage account, needed only without a Secret.
	Account string
	// Anonymous sends GCS requests without credentials, for emulators.
	Anonymous bool
	// PartSize is the S3 part, GCS chunk or ABS block size in bytes; 0 means the provider's
	// default. Upload memory is about PartSize x (Concurrency + 2) for S3, PartSize x
	// Concurrency for ABS and PartSize for GCS.
	PartSize int64
	// Concurrency is the number of parts (S3) or blocks (ABS) uploaded in parallel; 0 means the
	// provider's default.
	Concurrency int
	// CABundle is PEM CA certificates that S3, OSS, GCS and ABS trust for HTTPS on top of the system's
	// roots (the public roots compiled into the binaries where the image has none): for an
	// endpoint behind a private CA (on-prem MinIO, Ceph RGW, a TLS-inspecting proxy). Nil trusts
	// the system's roots only; a non-empty bundle without a PEM certificate is an error.
	CABundle []byte
	// ObjectLockMode (Governance or Compliance) and ObjectLockDays store every S3 object under
	// Object Lock retention (s3.Config); other providers refuse it.
	ObjectLockMode string
	ObjectLockDays int
}

// New builds the provider cfg describes. It makes no network request.
func New(ctx context.Context, cfg Config) (backend.Backend, error) {
	if cfg.ObjectLockMode != "" && cfg.Type != S3 {
		return nil, fmt.Errorf("object lock is an S3 feature; %s buckets take a retention policy on the bucket instead", cfg.Type)
	}
	b, err := newProvider(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return backend.WithPrefix(b, cfg.Prefix), nil
}

func newProvider(ctx context.Context, cfg Config) (backend.Backend, error) {
	switch cfg.Type {
	case S3:
		return newS3(ctx, cfg)
	case ABS:
		return newABS(ctx, cfg)
	case GCS:
		return newGCS(ctx, cfg)
	case OSS:
		return newOSS(ctx, cfg)
	case PVC:
		vc, err := volume.ClientConfig(cfg.Secret)
		if err != nil {
			return nil, err
		}
		return volume.New(vc)
	case Local:
		return local.New(ctx, local.Config{Dir: cfg.Bucket})
	case Memory:
		return memory.New(), nil
	default:
		return nil, fmt.Errorf("unknown backend type %q, want one of S3, ABS, GCS, OSS, PVC, Local, Memory", cfg.Type)
	}
}

func newS3(ctx context.Context, cfg Config) (backend.Backend, error) {
	c := s3.Config{
		Bucket:         cfg.Bucket,
		Region:         cfg.Region,
		Endpoint:       cfg.Endpoint,
		ForcePathStyle: cfg.ForcePathStyle,
		PartSize:       cfg.PartSize,
		Concurrency:    cfg.Concurrency,
		CABundle:       cfg.CABundle,
		ObjectLockMode: cfg.ObjectLockMode,
		ObjectLockDays: cfg.ObjectLockDays,
	}
	if cfg.Secret != nil {
		creds, region, err := s3.ParseAWSSecret(cfg.Secret)
		if err != nil {
			return nil, err
		}
		c.Credentials = &creds
		if c.Region == "" {
			c.Region = region
		}
	}
	return s3.New(ctx, c)
}

func newABS(ctx context.Context, cfg Config) (backend.Backend, error) {
	c := abs.Config{
		Container:   cfg.Bucket,
		Account:     cfg.Account,
		Endpoint:    cfg.Endpoint,
		BlockSize:   cfg.PartSize,
		Concurrency: cfg.Concurrency,
		CABundle:    cfg.CABundle,
	}
	if cfg.Secret != nil {
		var err error
		if c.Account, c.Key, c.Cloud, err = abs.ParseABSSecret(cfg.Secret); err != nil {
			return nil, err
		}
	}
	return abs.New(ctx, c)
}

func newGCS(ctx context.Context, cfg Config) (backend.Backend, error) {
	if cfg.PartSize > 1<<30 {
		return nil, errors.New("gcs: chunk size above 1 GiB")
	}
	c := gcs.Config{
		Bucket:    cfg.Bucket,
		Endpoint:  cfg.Endpoint,
		Anonymous: cfg.Anonymous,
		ChunkSize: int(cfg.PartSize),
		CABundle:  cfg.CABundle,
	}
	if cfg.Secret != nil {
		creds, err := gcs.ParseGCPSecret(cfg.Secret)
		if err != nil {
			return nil, err
		}
		c.Credentials = &creds
	}
	return gcs.New(ctx, c)
}

// SplitPath splits a coreos storage path "<bucket>/<key>" (the `path` field of the s3, abs,
// gcs and oss specs) into bucket (or container) and key.
func SplitPath(path string) (bucket, key string, err error) {
	bucket, key, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("storage path %q is not of the form <bucket>/<key>", path)
	}
	return bucket, key, nil
}
