package etcdbackup

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestObjectLockBackups: periodic backups with s3.objectLock (Compliance, 2 days) into a MinIO
// bucket with Object Lock are each stored under that retention; retention
// (maxBackups 1) takes the older backup out of the listing, but its locked version stays
// in the bucket, whole.
func TestObjectLockBackups(t *testing.T) {
	bucket := storagetest.NewS3LockBucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 100, 512)
	ns := namespace(t)
	createSecret(t, ns, "creds", bucket.Secret)
	b := newBackup(ns, "locked", []string{e.Endpoint}, bucket, "db/etcd.backup", "creds")
	b.Spec.S3.ObjectLock = &etcdv1beta2.S3ObjectLock{Mode: etcdv1beta2.S3ObjectLockCompliance, RetainDays: 2}
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 1, MaxBackups: 1}
	start := time.Now()
	create(t, b)

	c := storagetest.S3Client(t)
	var versions *s3.ListObjectVersionsOutput
	testutil.Eventually(t, 60*time.Second, "two backups, the older pruned", func() (bool, string) {
		var err error
		if versions, err = c.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket.Name)}); err != nil {
			return false, err.Error()
		}
		return len(versions.Versions) >= 2 && len(versions.DeleteMarkers) >= 1, fmt.Sprintf("%d versions, %d delete markers", len(versions.Versions), len(versions.DeleteMarkers))
	})
	for _, v := range versions.Versions {
		got, err := c.GetObjectRetention(t.Context(), &s3.GetObjectRetentionInput{Bucket: aws.String(bucket.Name), Key: v.Key, VersionId: v.VersionId})
		if err != nil {
			t.Fatalf("retention of %s: %v", aws.ToString(v.Key), err)
		}
		until := aws.ToTime(got.Retention.RetainUntilDate)
		if got.Retention.Mode != types.ObjectLockRetentionModeCompliance || until.Before(start.Add(48*time.Hour-time.Minute)) || until.After(time.Now().Add(48*time.Hour+time.Minute)) {
			t.Fatalf("%s is retained %s until %s, want COMPLIANCE for 2 days", aws.ToString(v.Key), got.Retention.Mode, until)
		}
		if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket.Name), Key: v.Key, VersionId: v.VersionId}); err == nil {
			t.Fatalf("deleted the locked version of %s", aws.ToString(v.Key))
		}
	}
	t.Logf("%d locked versions, %d pruned by retention (delete markers)", len(versions.Versions), len(versions.DeleteMarkers))
}
