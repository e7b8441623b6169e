// Package s3 is a backend.Backend on Amazon S3 and S3-compatible stores (MinIO, Ceph RGW, ...),
// built on aws-sdk-go-v2 and its multipart upload manager.
package s3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

const (
	// DefaultPartSize is the multipart part size when Config.PartSize is 0: S3's minimum, so
	// that a backup's part buffers (MemoryBound: 30 MiB) leave the backup operator's heap room
	// under its GOMEMLIMIT. With S3's limit of 10,000 parts it allows objects up to ~48 GiB,
	// far above etcd's database size limit (8 GiB suggested).
	DefaultPartSize = manager.MinUploadPartSize
	// DefaultConcurrency is the number of parts uploaded in parallel when Config.Concurrency is 0.
	DefaultConcurrency = 4
	// DefaultRegion is used when neither Config.Region nor the ambient AWS config sets one;
	// S3-compatible stores usually accept it.
	DefaultRegion = "us-east-1"
	// abortTimeout bounds the cleanup of a failed multipart upload.
	abortTimeout = 30 * time.Second
)

// Config configures the S3 provider.
type Config struct {
	// Bucket is the bucket name.
	Bucket string
	// Region is the bucket's region. Empty: the ambient AWS config's, else DefaultRegion.
	Region string
	// Endpoint overrides the S3 endpoint (scheme and host), for S3-compatible stores.
	Endpoint string
	// ForcePathStyle addresses buckets as endpoint/bucket instead of bucket.endpoint, as MinIO
	// and most S3-compatible stores need.
	ForcePathStyle bool
	// Credentials are static credentials (from an awsSecret). Nil uses the SDK's default chain:
	// environment, shared files, web identity (IRSA), container and instance roles.
	Credentials *Credentials
	// PartSize is the multipart part size in bytes (at least 5 MiB); 0 means DefaultPartSize.
	PartSize int64
	// Concurrency is the number of parts uploaded in parallel; 0 means DefaultConcurrency.
	Concurrency int
	// ListPageSize is the number of keys per listing request; 0 means the server's (1000).
	ListPageSize int32
	// CABundle is PEM certificates trusted on top of the system's roots for HTTPS, for an
	// endpoint behind a private CA; nil trusts the system's roots only.
	CABundle []byte
	// ChecksumWhenRequired sends and checks the SDK's flexible checksums (CRC32 in an
	// aws-chunked trailer, on by default since 2025) only where an operation requires them,
	// for stores that refuse aws-chunked uploads: Alibaba OSS asks AWS SDK users to turn chunked
	// encoding off. Integrity does not rest on them: a backup's sha256 is checked end to end.
	ChecksumWhenRequired bool
	// ObjectLockMode, when set (Governance or Compliance, any case), stores every object with
	// that Object Lock retention until ObjectLockDays after its upload: the bucket
	// must have been created with Object Lock enabled. A locked object version cannot be
	// deleted or overwritten until then (Governance: except by a user allowed to bypass it);
	// Delete then only adds a delete marker.
	ObjectLockMode string
	// ObjectLockDays is the retention of ObjectLockMode, in days (at least 1).
	ObjectLockDays int
	// Now returns the current time for the retention date; nil means time.Now.
	Now func() time.Time
}

func (c *Config) validate() error {
	if c.Bucket == "" {
		return errors.New("s3: Bucket is required")
	}
	switch types.ObjectLockMode(strings.ToUpper(c.ObjectLockMode)) {
	case "":
	case types.ObjectLockModeGovernance, types.ObjectLockModeCompliance:
		if c.ObjectLockDays < 1 {
			return errors.New("s3: ObjectLockDays must be at least 1 with ObjectLockMode")
		}
	default:
		return fmt.Errorf("s3: ObjectLockMode %q is neither Governance nor Compliance", c.ObjectLockMode)
	}
	if c.PartSize != 0 && c.PartSize < manager.MinUploadPartSize {
		return fmt.Errorf("s3: PartSize %d below the S3 minimum %d", c.PartSize, manager.MinUploadPartSize)
	}
	if c.Concurrency < 0 || c.ListPageSize < 0 {
		return errors.New("s3: Concurrency and ListPageSize must not be negative")
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("s3: Endpoint %q is not an absolute URL", c.Endpoint)
		}
	}
	return nil
}

// MemoryBound returns the most upload buffer memory a Put holds: the manager keeps Concurrency
// parts in flight, one being filled, and reads the first part separately.
func (c *Config) MemoryBound() int64 {
	cc := *c
	cc.setDefaults()
	return int64(cc.Concurrency+2) * cc.PartSize
}

func (c *Config) setDefaults() {
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
}

// Backend stores objects in one S3 bucket.
type Backend struct {
	cfg      Config
	client   *s3.Client
	uploader *manager.Uploader
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend for cfg. It makes no request: a missing bucket or bad credentials show
// up on first use.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if c := cfg.Credentials; c != nil {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	if cfg.ChecksumWhenRequired {
		opts = append(opts,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	if len(cfg.CABundle) > 0 {
		pool, err := backend.RootCAs(cfg.CABundle)
		if err != nil {
			return nil, fmt.Errorf("s3: %w", err)
		}
		// The SDK's buildable client keeps its own transport defaults; only the roots change.
		opts = append(opts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(
			func(tr *http.Transport) {
				if tr.TLSClientConfig == nil {
					tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
				}
				tr.TLSClientConfig.RootCAs = pool
			})))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.ForcePathStyle
	})
	// feature/s3/manager is marked deprecated in favour of feature/s3/transfermanager, which is
	// still pre-1.0 (its API may change in any release). The manager is stable, streams an
	// io.Reader of unknown size with a bounded pool of part buffers, and aborts the multipart
	// upload on failure (LeavePartsOnError false, its default, set explicitly here). Revisit when
	// transfermanager reaches 1.0.
	uploader := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = cfg.PartSize
		u.Concurrency = cfg.Concurrency
		u.LeavePartsOnError = false
	})
	return &Backend{cfg: cfg, client: client, uploader: uploader}, nil
}

// Put implements backend.Backend with a multipart upload (a single PutObject below PartSize).
func (b *Backend) Put(ctx context.Context, key string, r io.Reader) error {
	if err := backend.ValidateKey(key); err != nil {
		return fmt.Errorf("s3: putting %q: %w", key, err)
	}
	ur := backend.NewUploadReader(ctx, r)
	in := &s3.PutObjectInput{
		Bucket: aws.String(b.cfg.Bucket),
		Key:    aws.String(key),
		Body:   ur,
	}
	if b.cfg.ObjectLockMode != "" {
		now := time.Now
		if b.cfg.Now != nil {
			now = b.cfg.Now
		}
		in.ObjectLockMode = types.ObjectLockMode(strings.ToUpper(b.cfg.ObjectLockMode))
		in.ObjectLockRetainUntilDate = aws.Time(now().Add(time.Duration(b.cfg.ObjectLockDays) * 24 * time.Hour))
	}
	_, err := b.uploader.Upload(ctx, in)
	if err != nil {
		err = errors.Join(ur.Cause(err), b.abort(ctx, key, err))
		if b.cfg.ObjectLockMode != "" && isMissingLockConfig(err) {
			err = fmt.Errorf("objectLock is set, but bucket %s was not created with Object Lock enabled (it cannot be turned on later on every store): %w", b.cfg.Bucket, err)
		}
		return fmt.Errorf("s3: putting %q in bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return nil
}

// isMissingLockConfig reports whether err is S3's refusal of a locked upload to a bucket
// without Object Lock: InvalidRequest (AWS) or InvalidRequest/ObjectLockConfigurationNotFound
// (MinIO, Ceph) naming the lock configuration.
func isMissingLockConfig(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	if !ok {
		return false
	}
	msg := strings.ToLower(apiErr.ErrorCode() + " " + apiErr.ErrorMessage())
	return strings.Contains(msg, "object lock") || strings.Contains(msg, "objectlock")
}

// abort makes sure a failed multipart upload is aborted. The manager aborts it itself, but with
// the upload's context: when that context was cancelled its abort request fails too and the
// uploaded parts would linger (invisible, but billed). Aborting twice is harmless.
func (b *Backend) abort(ctx context.Context, key string, err error) error {
	mf, ok := errors.AsType[manager.MultiUploadFailure](err)
	if !ok || mf.UploadID() == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, aerr := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(b.cfg.Bucket),
		Key:      aws.String(key),
		UploadId: aws.String(mf.UploadID()),
	})
	if _, gone := errors.AsType[*types.NoSuchUpload](aerr); aerr == nil || gone {
		return nil
	}
	return fmt.Errorf("aborting multipart upload %s: %w", mf.UploadID(), aerr)
}

// notFound marks S3's "no such key" errors with backend.ErrNotFound (HEAD responses carry no
// body, so their code is the generic "NotFound"), and refused credentials with
// backend.ErrPermissionDenied.
func classify(err error) error {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%w: %w", backend.ErrNotFound, err)
		}
	}
	if he, ok := errors.AsType[interface {
		error
		HTTPStatusCode() int
	}](err); ok {
		return backend.MarkStatus(err, he.HTTPStatusCode())
	}
	return err
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("s3: getting %q from bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return out.Body, nil
}

// GetRange implements backend.Backend with an HTTP Range request.
func (b *Backend) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := backend.ValidateRange(offset, length); err != nil {
		return nil, fmt.Errorf("s3: getting %q range: %w", key, err)
	}
	rng := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 {
		rng = fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(b.cfg.Bucket), Key: aws.String(key), Range: aws.String(rng),
	})
	if err != nil {
		return nil, fmt.Errorf("s3: getting %q %s from bucket %s: %w", key, rng, b.cfg.Bucket, classify(err))
	}
	return out.Body, nil
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		return backend.ObjectInfo{}, fmt.Errorf("s3: stat %q in bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return backend.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// List implements backend.Backend, following every page of ListObjectsV2.
func (b *Backend) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.cfg.Bucket), Prefix: aws.String(prefix)}
	if b.cfg.ListPageSize > 0 {
		in.MaxKeys = aws.Int32(b.cfg.ListPageSize)
	}
	infos := []backend.ObjectInfo{}
	for p := s3.NewListObjectsV2Paginator(b.client, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: listing %q in bucket %s: %w", prefix, b.cfg.Bucket, classify(err))
		}
		for _, o := range page.Contents {
			infos = append(infos, backend.ObjectInfo{
				Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified),
			})
		}
	}
	// S3 lists in UTF-8 byte order already; S3-compatible stores are not all that careful.
	backend.SortObjects(infos)
	return infos, nil
}

// Delete implements backend.Backend. S3 itself answers 204 for a missing key.
func (b *Backend) Delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(key)})
	if err != nil && !backend.IsNotFound(classify(err)) {
		return fmt.Errorf("s3: deleting %q from bucket %s: %w", key, b.cfg.Bucket, classify(err))
	}
	return nil
}

// Close implements backend.Backend; the SDK client holds nothing that needs closing.
func (b *Backend) Close() error { return nil }
