package factory

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/s3"
)

// Alibaba Cloud OSS is served by the S3 provider: OSS speaks the S3 protocol (SigV4,
// virtual-hosted buckets, multipart uploads, ListObjectsV2), so an OSS location differs from an
// S3 one only in how its endpoint, region and credentials are written.
const (
	// DefaultOSSEndpoint is the endpoint of an OSS block without one: the region (China East 1,
	// Hangzhou) coreos/etcd-operator defaulted to, over HTTPS.
	DefaultOSSEndpoint = "https://oss-cn-hangzhou.aliyuncs.com"
	// OSSSecretAccessKeyID and OSSSecretAccessKeySecret are the keys of the coreos ossSecret.
	OSSSecretAccessKeyID     = "accessKeyID"
	OSSSecretAccessKeySecret = "accessKeySecret"
	// ossDomain is the domain of Alibaba Cloud's own OSS endpoints.
	ossDomain = ".aliyuncs.com"
)

// OSSEndpoint is how the S3 provider reaches an OSS endpoint.
type OSSEndpoint struct {
	// Endpoint is the S3-compatible endpoint (scheme and host).
	Endpoint string
	// Region is the SigV4 signing region.
	Region string
	// PathStyle is set for a host that is not Alibaba Cloud's (an S3-compatible stand-in such
	// as MinIO); OSS itself refuses path-style requests.
	PathStyle bool
}

// ResolveOSSEndpoint maps an oss block's endpoint onto the S3 protocol. Empty means
// DefaultOSSEndpoint. An Alibaba Cloud host oss-<region>[-internal].aliyuncs.com becomes the
// S3-compatible host Alibaba documents, s3.oss-<region>[-internal].aliyuncs.com (kept as it is
// when already written so), signed for <region> (e.g. cn-hangzhou) with bucket subdomains;
// oss-accelerate and other aliyuncs.com hosts without a region in their name are kept and
// signed for s3.DefaultRegion. Any other host is an S3-compatible stand-in (MinIO in the tests):
// path-style, s3.DefaultRegion. Config.Region, when set, overrides the region.
func ResolveOSSEndpoint(endpoint string) (OSSEndpoint, error) {
	if endpoint == "" {
		endpoint = DefaultOSSEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return OSSEndpoint{}, fmt.Errorf("oss: endpoint %q is not an http:// or https:// URL", endpoint)
	}
	host := strings.ToLower(u.Hostname())
	if !strings.HasSuffix(host, ossDomain) {
		return OSSEndpoint{Endpoint: endpoint, Region: s3.DefaultRegion, PathStyle: true}, nil
	}
	name := strings.TrimSuffix(host, ossDomain)
	region := strings.TrimPrefix(name, "s3.")
	if strings.Contains(region, ".") {
		// <bucket>.oss-<region>.aliyuncs.com: the bucket goes in the path, not the endpoint.
		return OSSEndpoint{}, fmt.Errorf("oss: endpoint %q names a bucket host; give the region endpoint, e.g. %s", endpoint, DefaultOSSEndpoint)
	}
	if strings.HasPrefix(name, "oss-") {
		name = "s3." + name
	}
	if r, ok := strings.CutPrefix(region, "oss-"); ok && r != "accelerate" && r != "" {
		region = strings.TrimSuffix(r, "-internal")
	} else {
		region = s3.DefaultRegion
	}
	s3URL := url.URL{Scheme: u.Scheme, Host: name + ossDomain}
	if p := u.Port(); p != "" {
		s3URL.Host += ":" + p
	}
	return OSSEndpoint{Endpoint: s3URL.String(), Region: region}, nil
}

// ParseOSSSecret reads a coreos ossSecret: an Alibaba Cloud AccessKey as `accessKeyID` and
// `accessKeySecret`, both required.
func ParseOSSSecret(data map[string][]byte) (s3.Credentials, error) {
	id, secret := strings.TrimSpace(string(data[OSSSecretAccessKeyID])), strings.TrimSpace(string(data[OSSSecretAccessKeySecret]))
	if id == "" || secret == "" {
		return s3.Credentials{}, fmt.Errorf("ossSecret: keys %q and %q are both required", OSSSecretAccessKeyID, OSSSecretAccessKeySecret)
	}
	return s3.Credentials{AccessKeyID: id, SecretAccessKey: secret}, nil
}

// newOSS is the S3 provider configured for an OSS location. It needs the ossSecret: the
// operators have no ambient Alibaba Cloud identity, and the AWS SDK's would be the wrong one.
func newOSS(ctx context.Context, cfg Config) (backend.Backend, error) {
	if cfg.Secret == nil {
		return nil, errors.New("oss: an ossSecret is required (there are no ambient OSS credentials)")
	}
	creds, err := ParseOSSSecret(cfg.Secret)
	if err != nil {
		return nil, err
	}
	ep, err := ResolveOSSEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Region != "" {
		ep.Region = cfg.Region
	}
	return s3.New(ctx, s3.Config{
		Bucket:               cfg.Bucket,
		Region:               ep.Region,
		Endpoint:             ep.Endpoint,
		ForcePathStyle:       ep.PathStyle,
		Credentials:          &creds,
		PartSize:             cfg.PartSize,
		Concurrency:          cfg.Concurrency,
		CABundle:             cfg.CABundle,
		ChecksumWhenRequired: true,
	})
}
