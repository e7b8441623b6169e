// Package storagetest creates buckets on the object-store servers hack/objstores.sh runs (MinIO,
// fake-gcs-server, Azurite; MinIO also stands in for Alibaba OSS) and the EtcdBackup storage
// blocks and credential Secrets that point at them, for the backup controllers' integration tests.
package storagetest

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/option"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

// Bucket is a fresh bucket (or container) and what an EtcdBackup needs to write to it.
type Bucket struct {
	Type   etcdv1beta2.BackupStorageType
	Name   string
	Secret map[string][]byte
	// Source returns the storage block for path "<bucket>/<key>" and the named Secret.
	Source func(key, secretName string) etcdv1beta2.BackupSource
}

// NewS3Bucket creates a bucket in MinIO; the Secret is an awsSecret (credentials and config).
func NewS3Bucket(t testing.TB) *Bucket {
	t.Helper()
	return newS3Bucket(t, false)
}

// NewS3LockBucket creates a bucket in MinIO with Object Lock enabled (and so versioning), as
// NewS3Bucket otherwise. Its locked objects stay in MinIO after the test.
func NewS3LockBucket(t testing.TB) *Bucket {
	t.Helper()
	return newS3Bucket(t, true)
}

// S3Client is a client of the MinIO server NewS3Bucket creates buckets in.
func S3Client(t testing.TB) *s3.Client {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY", "OBJSTORE_S3_REGION")
	return s3.New(s3.Options{
		Region:       env["OBJSTORE_S3_REGION"],
		BaseEndpoint: aws.String(env["OBJSTORE_S3_ENDPOINT"]),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(env["OBJSTORE_S3_ACCESS_KEY"], env["OBJSTORE_S3_SECRET_KEY"], ""),
	})
}

func newS3Bucket(t testing.TB, lock bool) *Bucket {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY", "OBJSTORE_S3_REGION")
	name := backendtest.UniqueName("backup-")
	c := S3Client(t)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(lock)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return &Bucket{
		Type: etcdv1beta2.BackupStorageTypeS3,
		Name: name,
		Secret: map[string][]byte{
			"credentials": fmt.Appendf(nil, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n",
				env["OBJSTORE_S3_ACCESS_KEY"], env["OBJSTORE_S3_SECRET_KEY"]),
			"config": fmt.Appendf(nil, "[default]\nregion = %s\n", env["OBJSTORE_S3_REGION"]),
		},
		Source: func(key, secret string) etcdv1beta2.BackupSource {
			return etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{
				Path: name + "/" + key, AWSSecret: secret, Endpoint: env["OBJSTORE_S3_ENDPOINT"], ForcePathStyle: true,
			}}
		},
	}
}

// NewOSSBucket creates a bucket in MinIO, standing in for Alibaba OSS (which the tests cannot
// reach); the Secret is an ossSecret (accessKeyID, accessKeySecret) and the block an oss block
// whose endpoint is MinIO's, which the operators address path-style as a host that is not
// Alibaba Cloud's.
func NewOSSBucket(t testing.TB) *Bucket {
	t.Helper()
	b := NewS3Bucket(t)
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY")
	b.Type = etcdv1beta2.BackupStorageTypeOSS
	b.Secret = map[string][]byte{
		etcdv1beta2.OSSSecretAccessKeyID:     []byte(env["OBJSTORE_S3_ACCESS_KEY"]),
		etcdv1beta2.OSSSecretAccessKeySecret: []byte(env["OBJSTORE_S3_SECRET_KEY"]),
	}
	b.Source = func(key, secret string) etcdv1beta2.BackupSource {
		return etcdv1beta2.BackupSource{OSS: &etcdv1beta2.OSSSource{
			Path: b.Name + "/" + key, OSSSecret: secret, Endpoint: env["OBJSTORE_S3_ENDPOINT"],
		}}
	}
	return b
}

// NewGCSBucket creates a bucket in fake-gcs-server; the Secret is a gcpSecret with an
// access-token (the emulator accepts any).
func NewGCSBucket(t testing.TB) *Bucket {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_GCS_ENDPOINT")
	name := backendtest.UniqueName("backup-")
	ctx := context.Background()
	c, err := storage.NewClient(ctx, option.WithEndpoint(env["OBJSTORE_GCS_ENDPOINT"]), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Bucket(name).Create(ctx, "etcd-suite-test", nil); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return &Bucket{
		Type:   etcdv1beta2.BackupStorageTypeGCS,
		Name:   name,
		Secret: map[string][]byte{"access-token": []byte("fake-token")},
		Source: func(key, secret string) etcdv1beta2.BackupSource {
			return etcdv1beta2.BackupSource{GCS: &etcdv1beta2.GCSSource{
				Path: name + "/" + key, GCPSecret: secret, Endpoint: env["OBJSTORE_GCS_ENDPOINT"],
			}}
		},
	}
}

// NewABSContainer creates a container in Azurite; the Secret is an absSecret.
func NewABSContainer(t testing.TB) *Bucket {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_ABS_ENDPOINT", "OBJSTORE_ABS_ACCOUNT", "OBJSTORE_ABS_KEY")
	name := backendtest.UniqueName("backup-")
	cred, err := azblob.NewSharedKeyCredential(env["OBJSTORE_ABS_ACCOUNT"], env["OBJSTORE_ABS_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(env["OBJSTORE_ABS_ENDPOINT"], cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatalf("creating container %s: %v", name, err)
	}
	return &Bucket{
		Type: etcdv1beta2.BackupStorageTypeABS,
		Name: name,
		Secret: map[string][]byte{
			"storage-account": []byte(env["OBJSTORE_ABS_ACCOUNT"]),
			"storage-key":     []byte(env["OBJSTORE_ABS_KEY"]),
		},
		Source: func(key, secret string) etcdv1beta2.BackupSource {
			return etcdv1beta2.BackupSource{ABS: &etcdv1beta2.ABSSource{
				Path: name + "/" + key, ABSSecret: secret, Endpoint: env["OBJSTORE_ABS_ENDPOINT"],
			}}
		},
	}
}

// S3Backend opens an S3 bucket made by NewS3Bucket as a backend.Backend, to write objects into
// it as the backup operator would; it is closed with the test.
func (b *Bucket) S3Backend(t testing.TB) backend.Backend {
	t.Helper()
	if b.Type != etcdv1beta2.BackupStorageTypeS3 {
		t.Fatalf("S3Backend of a %s bucket", b.Type)
	}
	src := b.Source("x", "unused")
	be, err := factory.New(t.Context(), factory.Config{Type: factory.S3, Bucket: b.Name, Secret: b.Secret, Endpoint: src.S3.Endpoint, ForcePathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}
