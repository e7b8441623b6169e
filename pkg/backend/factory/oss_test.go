package factory

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
)

func TestResolveOSSEndpoint(t *testing.T) {
	cases := []struct {
		endpoint string
		want     OSSEndpoint
		wantErr  string
	}{
		// coreos/etcd-operator's default, over HTTPS.
		{"", OSSEndpoint{Endpoint: "https://s3.oss-cn-hangzhou.aliyuncs.com", Region: "cn-hangzhou"}, ""},
		// The coreos examples' form: the scheme is kept.
		{"http://oss-cn-hangzhou.aliyuncs.com", OSSEndpoint{Endpoint: "http://s3.oss-cn-hangzhou.aliyuncs.com", Region: "cn-hangzhou"}, ""},
		{"https://oss-eu-central-1.aliyuncs.com/", OSSEndpoint{Endpoint: "https://s3.oss-eu-central-1.aliyuncs.com", Region: "eu-central-1"}, ""},
		{"https://OSS-ap-southeast-1-internal.aliyuncs.com", OSSEndpoint{Endpoint: "https://s3.oss-ap-southeast-1-internal.aliyuncs.com", Region: "ap-southeast-1"}, ""},
		// Already the S3-compatible host.
		{"https://s3.oss-cn-beijing.aliyuncs.com", OSSEndpoint{Endpoint: "https://s3.oss-cn-beijing.aliyuncs.com", Region: "cn-beijing"}, ""},
		{"https://oss-accelerate.aliyuncs.com", OSSEndpoint{Endpoint: "https://s3.oss-accelerate.aliyuncs.com", Region: s3.DefaultRegion}, ""},
		// Not Alibaba Cloud: an S3-compatible stand-in, path-style, as given.
		{"http://127.0.0.1:9000", OSSEndpoint{Endpoint: "http://127.0.0.1:9000", Region: s3.DefaultRegion, PathStyle: true}, ""},
		{"https://minio.backup.svc:9000", OSSEndpoint{Endpoint: "https://minio.backup.svc:9000", Region: s3.DefaultRegion, PathStyle: true}, ""},
		{"https://mybucket.oss-cn-hangzhou.aliyuncs.com", OSSEndpoint{}, "names a bucket host"},
		{"oss-cn-hangzhou.aliyuncs.com", OSSEndpoint{}, "not an http:// or https:// URL"},
	}
	for _, tc := range cases {
		got, err := ResolveOSSEndpoint(tc.endpoint)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ResolveOSSEndpoint(%q) = %+v, %v; want an error containing %q", tc.endpoint, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ResolveOSSEndpoint(%q) = %+v, %v; want %+v", tc.endpoint, got, err, tc.want)
		}
	}
}

func TestNewOSS(t *testing.T) {
	ossSecret := map[string][]byte{"accessKeyID": []byte("LTAI5t\n"), "accessKeySecret": []byte("s")}
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"coreos default endpoint", Config{Type: OSS, Bucket: "b", Secret: ossSecret}, ""},
		{"region endpoint", Config{Type: OSS, Bucket: "b", Secret: ossSecret, Endpoint: "http://oss-cn-shanghai.aliyuncs.com"}, ""},
		{"no ossSecret", Config{Type: OSS, Bucket: "b"}, "ossSecret is required"},
		{"ossSecret without accessKeySecret", Config{Type: OSS, Bucket: "b", Secret: map[string][]byte{"accessKeyID": []byte("id")}}, "both required"},
		{"an awsSecret is not an ossSecret", Config{Type: OSS, Bucket: "b", Secret: awsSecret()}, "both required"},
		{"bucket host", Config{Type: OSS, Bucket: "b", Secret: ossSecret, Endpoint: "https://b.oss-cn-hangzhou.aliyuncs.com"}, "bucket host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(t.Context(), tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(): %v", err)
			}
			_ = b.Close()
		})
	}
	creds, err := ParseOSSSecret(ossSecret)
	if err != nil || creds.AccessKeyID != "LTAI5t" || creds.SecretAccessKey != "s" {
		t.Fatalf("ParseOSSSecret = %v, %v", creds, err)
	}
}

// TestAcceptanceOSSMinIO: an OSS location whose endpoint is the MinIO hack/objstores.sh runs
// (standing in for OSS, which is not reachable from the tests), with an ossSecret, passes the
// whole backend acceptance test through the S3 provider as OSS configures it (path-style for a
// host that is not Alibaba Cloud's, flexible checksums only where required).
func TestAcceptanceOSSMinIO(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY", "OBJSTORE_S3_REGION")
	cfg := Config{Type: OSS, Bucket: backendtest.UniqueName("oss-"), Endpoint: env["OBJSTORE_S3_ENDPOINT"],
		Secret:   map[string][]byte{"accessKeyID": []byte(env["OBJSTORE_S3_ACCESS_KEY"]), "accessKeySecret": []byte(env["OBJSTORE_S3_SECRET_KEY"])},
		PartSize: 5 << 20, Concurrency: 3}
	c := awss3.New(awss3.Options{
		Region: env["OBJSTORE_S3_REGION"], BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(env["OBJSTORE_S3_ACCESS_KEY"], env["OBJSTORE_S3_SECRET_KEY"], ""),
	})
	if _, err := c.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", cfg.Bucket, err)
	}
	b, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		infos, _ := b.List(ctx, "")
		for _, info := range infos {
			_ = b.Delete(ctx, info.Key)
		}
		_ = b.Close()
		if _, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
			t.Errorf("deleting bucket %s: %v", cfg.Bucket, err)
		}
	})
	backendtest.AcceptanceTest(t, b)
}

// TestCABundleOSSMinIO: an OSS endpoint behind a private CA (a MinIO serving HTTPS with a
// certificate of a CA made in the test) is refused without endpointCA's bundle and passes the
// acceptance test with it.
func TestCABundleOSSMinIO(t *testing.T) {
	pki := newTestPKI(t)
	endpoint := startTLSMinIO(t, pki)
	cfg := Config{Type: OSS, Bucket: backendtest.UniqueName("tls-oss-"), Endpoint: endpoint,
		Secret:   map[string][]byte{"accessKeyID": []byte(tlsMinIOUser), "accessKeySecret": []byte(tlsMinIOPassword)},
		PartSize: 5 << 20, Concurrency: 3, CABundle: pki.caPEM}
	createS3Bucket(t, endpoint, pki.caPEM, cfg.Bucket)

	checkCABundle(t, cfg)
}
