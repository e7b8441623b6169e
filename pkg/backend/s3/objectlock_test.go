package s3

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// newLockBackend is a Backend with Object Lock (Governance, 1 day) on a fresh MinIO bucket,
// created with Object Lock enabled when locked is true. The bucket is emptied at the end by
// bypassing the governance retention, as its owner may.
func newLockBackend(t *testing.T, locked bool, now time.Time) *Backend {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY", "OBJSTORE_S3_REGION")
	b, err := New(t.Context(), Config{
		Bucket: backendtest.UniqueName("lock-"), Region: env["OBJSTORE_S3_REGION"], Endpoint: env["OBJSTORE_S3_ENDPOINT"], ForcePathStyle: true,
		Credentials:    &Credentials{AccessKeyID: env["OBJSTORE_S3_ACCESS_KEY"], SecretAccessKey: env["OBJSTORE_S3_SECRET_KEY"]},
		PartSize:       5 << 20,
		ObjectLockMode: "Governance", ObjectLockDays: 1,
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	bucket := aws.String(b.cfg.Bucket)
	if _, err := b.client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: bucket, ObjectLockEnabledForBucket: aws.Bool(locked)}); err != nil {
		t.Fatalf("creating bucket %s: %v", b.cfg.Bucket, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		vs, _ := b.client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: bucket})
		if vs != nil {
			for _, v := range vs.Versions {
				_, _ = b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: v.Key, VersionId: v.VersionId, BypassGovernanceRetention: aws.Bool(true)})
			}
			for _, m := range vs.DeleteMarkers {
				_, _ = b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: m.Key, VersionId: m.VersionId})
			}
		}
		_, _ = b.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket})
	})
	return b
}

// TestObjectLock: with objectLock, every object (a multipart upload too) is stored under
// Governance retention until a day after its upload; the version cannot be deleted without
// bypassing the retention, and the backend's Delete (retention pruning) only hides it behind a
// delete marker: the data stays. A bucket created without Object Lock refuses the upload with
// a message that says so.
func TestObjectLock(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	b := newLockBackend(t, true, now)
	ctx := t.Context()
	data := bytes.Repeat([]byte("x"), 12<<20) // three parts
	if err := b.Put(ctx, "backup", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	head, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String("backup")})
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockMode != types.ObjectLockModeGovernance || head.ObjectLockRetainUntilDate == nil ||
		!head.ObjectLockRetainUntilDate.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("lock %q until %v, want GOVERNANCE until %s", head.ObjectLockMode, head.ObjectLockRetainUntilDate, now.Add(24*time.Hour))
	}
	if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String("backup"), VersionId: head.VersionId}); err == nil {
		t.Fatal("deleting the locked version succeeded")
	}
	if err := b.Delete(ctx, "backup"); err != nil {
		t.Fatalf("Delete (a delete marker): %v", err)
	}
	if infos, err := b.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Fatalf("List after Delete = %v, %v; want nothing listed", infos, err)
	}
	got, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String("backup"), VersionId: head.VersionId})
	if err != nil {
		t.Fatalf("the locked version is gone after Delete: %v", err)
	}
	got.Body.Close()
	if aws.ToInt64(got.ContentLength) != int64(len(data)) {
		t.Fatalf("locked version has %d bytes, want %d", aws.ToInt64(got.ContentLength), len(data))
	}

	plain := newLockBackend(t, false, now)
	err = plain.Put(ctx, "backup", bytes.NewReader([]byte("data")))
	if err == nil || !strings.Contains(err.Error(), "not created with Object Lock enabled") {
		t.Fatalf("Put with objectLock to a bucket without it: %v; want a message naming Object Lock", err)
	}
}
