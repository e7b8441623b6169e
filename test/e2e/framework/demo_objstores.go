//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"

	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

// OpenBucket is NewBucket for programs that are not tests (hack/demo): it opens the bucket name
// on the server of typ, creating it when it does not exist yet, and never deletes anything. The
// caller closes Backend().
func (s *ObjStores) OpenBucket(ctx context.Context, typ etcdv1beta2.BackupStorageType, name string) (*Bucket, error) {
	bk := &Bucket{Type: typ, Name: name, stores: s}
	if err := s.createBucket(ctx, typ, name); err != nil && !bucketExists(err) {
		return nil, fmt.Errorf("creating %s bucket %s: %w", typ, name, err)
	}
	b, err := factory.New(ctx, bk.FactoryConfig())
	if err != nil {
		return nil, fmt.Errorf("%s backend for bucket %s: %w", typ, name, err)
	}
	bk.b = b
	return bk, nil
}

// bucketExists says whether a create-bucket error means the bucket is already there (S3 only:
// OpenBucket's callers use S3).
func bucketExists(err error) bool {
	var owned *s3types.BucketAlreadyOwnedByYou
	var exists *s3types.BucketAlreadyExists
	return errors.As(err, &owned) || errors.As(err, &exists)
}
