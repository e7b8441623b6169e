package factory

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// TestCABundleS3MinIO: a MinIO serving HTTPS with a certificate of a CA made in the test is
// refused for an unknown authority without the bundle, and passes the whole acceptance test
// with Config.CABundle set to that CA.
func TestCABundleS3MinIO(t *testing.T) {
	pki := newTestPKI(t)
	endpoint := startTLSMinIO(t, pki)
	cfg := Config{Type: S3, Bucket: backendtest.UniqueName("tls-"), Endpoint: endpoint, ForcePathStyle: true,
		Region: "us-east-1", Secret: awsSecret(), PartSize: 5 << 20, Concurrency: 3, CABundle: pki.caPEM}
	createS3Bucket(t, endpoint, pki.caPEM, cfg.Bucket)

	checkCABundle(t, cfg)
}

// TestCABundleGCS and TestCABundleABS put an HTTPS proxy with the test CA's certificate in
// front of the fake-gcs-server and Azurite hack/objstores.sh runs: the providers refuse it
// without the bundle and pass the acceptance test through it with the bundle.
func TestCABundleGCS(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_GCS_ENDPOINT")
	pki := newTestPKI(t)
	upstream, err := url.Parse(env["OBJSTORE_GCS_ENDPOINT"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := tlsProxy(t, pki, upstream)
	cfg := Config{Type: GCS, Bucket: backendtest.UniqueName("tls-"), Endpoint: proxy + upstream.Path,
		Anonymous: true, PartSize: 4 << 20, CABundle: pki.caPEM}
	plain, err := New(t.Context(), Config{Type: GCS, Bucket: cfg.Bucket, Endpoint: env["OBJSTORE_GCS_ENDPOINT"], Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	createGCSBucket(t, env["OBJSTORE_GCS_ENDPOINT"], cfg.Bucket)

	checkCABundle(t, cfg)
}

func TestCABundleABS(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_ABS_ENDPOINT", "OBJSTORE_ABS_ACCOUNT", "OBJSTORE_ABS_KEY")
	pki := newTestPKI(t)
	upstream, err := url.Parse(env["OBJSTORE_ABS_ENDPOINT"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := tlsProxy(t, pki, upstream)
	secret := map[string][]byte{"storage-account": []byte(env["OBJSTORE_ABS_ACCOUNT"]), "storage-key": []byte(env["OBJSTORE_ABS_KEY"])}
	cfg := Config{Type: ABS, Bucket: backendtest.UniqueName("tls-"), Endpoint: proxy + upstream.Path,
		Secret: secret, PartSize: 4 << 20, Concurrency: 3, CABundle: pki.caPEM}
	createABSContainer(t, env["OBJSTORE_ABS_ENDPOINT"], secret, cfg.Bucket)

	checkCABundle(t, cfg)
}

// wantUnknownAuthority checks that a backend built from cfg cannot store an object because the
// server's certificate does not verify.
func wantUnknownAuthority(t *testing.T, cfg Config) {
	t.Helper()
	b, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Put(t.Context(), "refused", strings.NewReader("x"))
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) && (err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority")) {
		t.Fatalf("Put without the CA bundle = %v, want a certificate verification error", err)
	}
	if _, err := b.Stat(t.Context(), "refused"); err == nil {
		t.Fatal("Stat without the CA bundle succeeded")
	}
}

// tlsProxy serves HTTPS with pki's server certificate on loopback and forwards to upstream,
// rewriting absolute upstream URLs in Location headers (resumable upload sessions) to itself.
func tlsProxy(t *testing.T, pki testPKI, upstream *url.URL) string {
	t.Helper()
	base := &url.URL{Scheme: upstream.Scheme, Host: upstream.Host}
	rp := httputil.NewSingleHostReverseProxy(base)
	srv := httptest.NewUnstartedServer(rp)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.serverCert}, MinVersion: tls.VersionTLS12}
	// The refused handshakes of the "without the bundle" cases are expected: not logged.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// fake-gcs-server builds upload session URLs from its external URL or from the request's
	// Host (the proxy's), always with http://.
	proxied := "http://" + strings.TrimPrefix(srv.URL, "https://")
	rp.ModifyResponse = func(r *http.Response) error {
		loc := r.Header.Get("Location")
		for _, prefix := range []string{base.String(), proxied} {
			if strings.HasPrefix(loc, prefix) {
				r.Header.Set("Location", srv.URL+strings.TrimPrefix(loc, prefix))
			}
		}
		return nil
	}
	return srv.URL
}

func createS3Bucket(t *testing.T, endpoint string, caPEM []byte, bucket string) {
	t.Helper()
	tr, err := backend.HTTPTransport(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(tlsMinIOUser, tlsMinIOPassword, ""),
		HTTPClient:  &http.Client{Transport: tr},
	})
	if _, err := c.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	t.Cleanup(func() {
		if _, err := c.DeleteBucket(context.Background(), &awss3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("deleting bucket %s: %v", bucket, err)
		}
	})
}

// checkCABundle: without cfg's CA bundle the store is refused for an unknown authority; with it
// the provider passes the whole acceptance test.
func checkCABundle(t *testing.T, cfg Config) {
	t.Helper()
	t.Run("without the bundle", func(t *testing.T) {
		noCA := cfg
		noCA.CABundle = nil
		wantUnknownAuthority(t, noCA)
	})
	t.Run("with the bundle", func(t *testing.T) {
		b, err := New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		backendtest.AcceptanceTest(t, b)
	})
}
