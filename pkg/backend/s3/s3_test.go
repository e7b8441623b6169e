package s3

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// newMinIOBackend returns a Backend on a fresh bucket of the server hack/objstores.sh started
// (small parts and list pages, so multipart upload and pagination are exercised), and removes
// the bucket when the test ends.
func newMinIOBackend(t *testing.T) *Backend {
	t.Helper()
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY",
		"OBJSTORE_S3_SECRET_KEY", "OBJSTORE_S3_REGION")
	ctx := t.Context()
	b, err := New(ctx, Config{
		Bucket:         backendtest.UniqueName("acceptance-"),
		Region:         env["OBJSTORE_S3_REGION"],
		Endpoint:       env["OBJSTORE_S3_ENDPOINT"],
		ForcePathStyle: true,
		Credentials: &Credentials{
			AccessKeyID:     env["OBJSTORE_S3_ACCESS_KEY"],
			SecretAccessKey: env["OBJSTORE_S3_SECRET_KEY"],
		},
		PartSize:     5 << 20,
		Concurrency:  3,
		ListPageSize: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	bucket := aws.String(b.cfg.Bucket)
	if _, err := b.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatalf("creating bucket %s: %v", b.cfg.Bucket, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		infos, _ := b.List(ctx, "")
		for _, info := range infos {
			_ = b.Delete(ctx, info.Key)
		}
		if _, err := b.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket}); err != nil {
			t.Errorf("deleting bucket %s: %v", b.cfg.Bucket, err)
		}
	})
	return b
}

func TestAcceptanceMinIO(t *testing.T) {
	backendtest.AcceptanceTest(t, newMinIOBackend(t))
}

// TestFailedUploadLeavesNoParts checks what AcceptanceTest cannot see: a failed or cancelled
// multipart upload is aborted, so no parts stay behind (invisible, but stored and billed).
func TestFailedUploadLeavesNoParts(t *testing.T) {
	b := newMinIOBackend(t)
	cases := []struct {
		name   string
		cancel bool
	}{
		{"reader error", false},
		{"context cancelled", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "parts/" + tc.name
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &failAfter{data: bytes.Repeat([]byte("x"), 64<<10), left: 12 << 20}
			if tc.cancel {
				r.cancel = cancel
			}
			err := b.Put(ctx, key, r)
			if err == nil || tc.cancel != errors.Is(err, context.Canceled) {
				t.Fatalf("Put() = %v, want a failure (cancelled: %v)", err, tc.cancel)
			}
			out, err := b.client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{
				Bucket: aws.String(b.cfg.Bucket), Prefix: aws.String(key),
			})
			if err != nil {
				t.Fatalf("ListMultipartUploads: %v", err)
			}
			if len(out.Uploads) != 0 {
				t.Fatalf("%d multipart uploads left for %q after a failed Put, want 0", len(out.Uploads), key)
			}
			if _, err := b.Stat(t.Context(), key); !backend.IsNotFound(err) {
				t.Fatalf("Stat(%q) after a failed Put = %v, want not found", key, err)
			}
		})
	}
}

var errBroken = errors.New("stream broke")

// failAfter returns copies of data until left bytes were read, then cancels (if set) and keeps
// going, or fails.
type failAfter struct {
	data   []byte
	left   int
	cancel context.CancelFunc
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.left <= 0 {
		if f.cancel == nil {
			return 0, errBroken
		}
		f.cancel()
	}
	n := copy(p, f.data)
	f.left -= n
	return n, nil
}

// TestPermissionDeniedMinIO: a wrong secret key is reported as backend.ErrPermissionDenied by
// every call, so controllers can say InvalidCredentials instead of "unreachable".
func TestPermissionDeniedMinIO(t *testing.T) {
	good := newMinIOBackend(t)
	cfg := good.cfg
	cfg.Credentials = &Credentials{AccessKeyID: cfg.Credentials.AccessKeyID, SecretAccessKey: "wrong-secret-key"}
	bad, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.PermissionDenied(t, bad)
}
