package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/option"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/abs"
	"github.com/etcd-operator/etcd-operator/pkg/backend/gcs"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
)

// target is one server: our backend on it, and a baseline upload through the same server with
// the raw SDK and the same part size and concurrency.
type target struct {
	name   string
	desc   string // part configuration, for the report
	ours   backend.Backend
	raw    func(ctx context.Context, key string, r io.Reader) error
	bound  int64 // upload buffer memory the provider documents
	offGo  bool  // buffers are outside the Go heap (mmap), so bound applies to RSS
	remove func()
}

func env(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is unset: run `hack/objstores.sh up` and source .cache/objstores/env", name)
	}
	return v, nil
}

func newS3Target(ctx context.Context, bucket string) (*target, error) {
	endpoint, err := env("OBJSTORE_S3_ENDPOINT")
	if err != nil {
		return nil, err
	}
	cfg := s3.Config{
		Bucket: bucket, Region: os.Getenv("OBJSTORE_S3_REGION"), Endpoint: endpoint, ForcePathStyle: true,
		Credentials: &s3.Credentials{
			AccessKeyID: os.Getenv("OBJSTORE_S3_ACCESS_KEY"), SecretAccessKey: os.Getenv("OBJSTORE_S3_SECRET_KEY"),
		},
	}
	ours, err := s3.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	client := awss3.New(awss3.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, ""),
	})
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil, fmt.Errorf("creating bucket: %w", err)
	}
	up := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize, u.Concurrency = s3.DefaultPartSize, s3.DefaultConcurrency
	})
	return &target{
		name: "s3 (MinIO)", ours: ours, bound: cfg.MemoryBound(),
		desc: fmt.Sprintf("%d MiB parts x %d", s3.DefaultPartSize>>20, s3.DefaultConcurrency),
		raw: func(ctx context.Context, key string, r io.Reader) error {
			_, err := up.Upload(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: r})
			return err
		},
		remove: func() {
			_, _ = client.DeleteBucket(context.Background(), &awss3.DeleteBucketInput{Bucket: aws.String(bucket)})
		},
	}, nil
}

func newGCSTarget(ctx context.Context, bucket string, chunk int) (*target, error) {
	endpoint, err := env("OBJSTORE_GCS_ENDPOINT")
	if err != nil {
		return nil, err
	}
	cfg := gcs.Config{Bucket: bucket, Endpoint: endpoint, Anonymous: true, ChunkSize: chunk}
	ours, err := gcs.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	client, err := storage.NewClient(ctx, option.WithEndpoint(endpoint), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		return nil, err
	}
	if err := client.Bucket(bucket).Create(ctx, "bench", nil); err != nil {
		return nil, fmt.Errorf("creating bucket: %w", err)
	}
	return &target{
		name: "gcs (fake-gcs-server)", ours: ours, bound: cfg.MemoryBound(),
		desc: fmt.Sprintf("%d MiB chunks", chunk>>20),
		raw: func(ctx context.Context, key string, r io.Reader) error {
			w := client.Bucket(bucket).Object(key).NewWriter(ctx)
			w.ChunkSize = chunk
			if _, err := io.Copy(w, r); err != nil {
				return err
			}
			return w.Close()
		},
		remove: func() { _ = client.Bucket(bucket).Delete(context.Background()); _ = client.Close() },
	}, nil
}

func newABSTarget(ctx context.Context, name string) (*target, error) {
	endpoint, err := env("OBJSTORE_ABS_ENDPOINT")
	if err != nil {
		return nil, err
	}
	cfg := abs.Config{
		Container: name, Account: os.Getenv("OBJSTORE_ABS_ACCOUNT"),
		Key: abs.SharedKey(os.Getenv("OBJSTORE_ABS_KEY")), Endpoint: endpoint,
	}
	ours, err := abs.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cred, err := container.NewSharedKeyCredential(cfg.Account, string(cfg.Key))
	if err != nil {
		return nil, err
	}
	client, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+name, cred, nil)
	if err != nil {
		return nil, err
	}
	if _, err := client.Create(ctx, nil); err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	return &target{
		name: "abs (Azurite)", ours: ours, bound: cfg.MemoryBound(), offGo: true,
		desc: fmt.Sprintf("%d MiB blocks x %d", abs.DefaultBlockSize>>20, abs.DefaultConcurrency),
		raw: func(ctx context.Context, key string, r io.Reader) error {
			_, err := client.NewBlockBlobClient(key).UploadStream(ctx, r, &blockblob.UploadStreamOptions{
				BlockSize: abs.DefaultBlockSize, Concurrency: abs.DefaultConcurrency,
			})
			return err
		},
		remove: func() { _, _ = client.Delete(context.Background(), nil) },
	}, nil
}

func newLocalTarget(ctx context.Context, dir string) (*target, error) {
	ours, err := local.New(ctx, local.Config{Dir: filepath.Join(dir, "ours")})
	if err != nil {
		return nil, err
	}
	rawDir := filepath.Join(dir, "raw")
	if err := os.MkdirAll(rawDir, 0o750); err != nil {
		return nil, err
	}
	return &target{
		name: "local (filesystem)", ours: ours, bound: 1 << 20, desc: "io.Copy, fsync, rename",
		raw: func(ctx context.Context, key string, r io.Reader) error {
			f, err := os.Create(filepath.Join(rawDir, filepath.Base(key)))
			if err != nil {
				return err
			}
			defer os.Remove(f.Name())
			if _, err := io.Copy(f, r); err != nil {
				_ = f.Close()
				return err
			}
			return f.Close()
		},
		remove: func() { _ = os.RemoveAll(dir) },
	}, nil
}
