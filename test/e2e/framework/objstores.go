//go:build e2e

package framework

// Object stores that the cluster's pods reach, for tests of the backup and restore operators.
//
// hack/e2e.sh runs MinIO (S3), fake-gcs-server (GCS) and Azurite (ABS) on the local cluster's
// bridge address (`OBJSTORES_BIND=10.244.0.1 hack/objstores.sh up`) and exports
// E2E_OBJSTORES_ENV, the path of their env file (.cache/objstores/pods.env). The file has the same
// OBJSTORE_* variables as the loopback set's .cache/objstores/env, and the host reaches the
// servers at the same addresses as the pods, so one endpoint serves the operator's spec and the
// test's own reads:
//
//	stores := framework.ObjectStores(t)                  // skips when not configured
//	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeGCS)
//	bucket.CreateSecret(t, f, ns, "creds")               // coreos awsSecret/gcpSecret/absSecret
//	spec.StorageType = bucket.Type
//	spec.BackupSource = bucket.Source("etcd.backup", "creds")
//	...
//	sum, size := bucket.Download(t, "etcd.backup", file) // the object, read from the host
//	bucket.FlipByte(t, "etcd.backup", 100)               // corrupt it
//	bucket.Upload(t, "other.backup", file)               // put a file there
//	bucket.Delete(t, "etcd.backup")
//	bucket.Backend().List(ctx, "")                       // any other backend.Backend call
//
// Running `go test` by hand: `OBJSTORES_BIND=10.244.0.1 hack/objstores.sh up` once, then
// E2E_OBJSTORES_ENV=$PWD/.cache/objstores/pods.env (the default when unset). A missing file skips
// the tests that need it, unless E2E_OBJSTORES_REQUIRED=1 (or OBJSTORES_REQUIRED=1), which fails
// them instead.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
)

const (
	// ObjectStoresEnvVar names the env file of the pod-reachable object stores.
	ObjectStoresEnvVar = "E2E_OBJSTORES_ENV"
	// ObjectStoresRequiredVar=1 turns a missing env file into a test failure instead of a skip.
	ObjectStoresRequiredVar = "E2E_OBJSTORES_REQUIRED"
)

// ObjStores are the object-store servers of an env file written by hack/objstores.sh.
type ObjStores struct {
	// EnvFile is the file the values were read from.
	EnvFile string
	// Vars holds every OBJSTORE_* variable of the file.
	Vars map[string]string

	S3Endpoint, S3AccessKey, S3SecretKey, S3Region string
	// GCSEndpoint is the JSON API endpoint, ending in /storage/v1/.
	GCSEndpoint string
	// ABSEndpoint is the blob service URL, http://<host>:<port>/<account>.
	ABSEndpoint, ABSAccount, ABSKey string
	// S3CA is the PEM CA of an S3 endpoint behind a private CA (TLSMinIO); nil: public roots.
	S3CA []byte
}

// ObjectStores reads $E2E_OBJSTORES_ENV (default <repo>/.cache/objstores/pods.env). When the file
// is missing or incomplete the test is skipped, or fails with E2E_OBJSTORES_REQUIRED=1.
func ObjectStores(t testing.TB) *ObjStores {
	t.Helper()
	path := os.Getenv(ObjectStoresEnvVar)
	if path == "" {
		root, err := findRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, ".cache", "objstores", "pods.env")
	}
	s, err := LoadObjectStores(path)
	if err != nil {
		msg := fmt.Sprintf("pod-reachable object stores not configured: %v "+
			"(hack/e2e.sh starts them; by hand: OBJSTORES_BIND=10.244.0.1 hack/objstores.sh up)", err)
		if os.Getenv(ObjectStoresRequiredVar) == "1" || os.Getenv("OBJSTORES_REQUIRED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return s
}

// LoadObjectStores parses an env file of `export OBJSTORE_X=value` lines, for programs that are
// not tests (a demo).
func LoadObjectStores(path string) (*ObjStores, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "OBJSTORE_") {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	s := &ObjStores{
		EnvFile: path, Vars: vars,
		S3Endpoint: vars["OBJSTORE_S3_ENDPOINT"], S3AccessKey: vars["OBJSTORE_S3_ACCESS_KEY"],
		S3SecretKey: vars["OBJSTORE_S3_SECRET_KEY"], S3Region: vars["OBJSTORE_S3_REGION"],
		GCSEndpoint: vars["OBJSTORE_GCS_ENDPOINT"],
		ABSEndpoint: vars["OBJSTORE_ABS_ENDPOINT"], ABSAccount: vars["OBJSTORE_ABS_ACCOUNT"], ABSKey: vars["OBJSTORE_ABS_KEY"],
	}
	for _, k := range []string{"OBJSTORE_S3_ENDPOINT", "OBJSTORE_S3_ACCESS_KEY", "OBJSTORE_S3_SECRET_KEY",
		"OBJSTORE_S3_REGION", "OBJSTORE_GCS_ENDPOINT", "OBJSTORE_ABS_ENDPOINT", "OBJSTORE_ABS_ACCOUNT", "OBJSTORE_ABS_KEY"} {
		if vars[k] == "" {
			return nil, fmt.Errorf("%s: %s is not set", path, k)
		}
	}
	return s, nil
}

// StorageTypes are the three providers, for table tests.
var StorageTypes = []etcdv1beta2.BackupStorageType{
	etcdv1beta2.BackupStorageTypeS3, etcdv1beta2.BackupStorageTypeGCS, etcdv1beta2.BackupStorageTypeABS,
}

// Bucket is a fresh bucket (S3, GCS) or container (ABS) on one of the servers.
type Bucket struct {
	Type   etcdv1beta2.BackupStorageType
	Name   string
	stores *ObjStores
	b      backend.Backend
}

// NewBucket creates a bucket with a unique name on the server of typ. At the end of the test its
// objects are deleted (snapshots are large; the empty bucket stays until `hack/objstores.sh down`).
func (s *ObjStores) NewBucket(t testing.TB, typ etcdv1beta2.BackupStorageType) *Bucket {
	t.Helper()
	bk := &Bucket{Type: typ, Name: "e2e-" + rand.String(10), stores: s}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.createBucket(ctx, typ, bk.Name); err != nil {
		t.Fatalf("creating %s bucket %s: %v", typ, bk.Name, err)
	}
	b, err := factory.New(ctx, bk.FactoryConfig())
	if err != nil {
		t.Fatalf("%s backend for bucket %s: %v", typ, bk.Name, err)
	}
	bk.b = b
	t.Logf("%s bucket %s", typ, bk.Name)
	t.Cleanup(func() {
		defer b.Close()
		if os.Getenv("E2E_KEEP_NAMESPACES") == "1" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		objs, err := b.List(ctx, "")
		if err != nil {
			t.Logf("cleaning up bucket %s: %v", bk.Name, err)
			return
		}
		for _, o := range objs {
			if err := b.Delete(ctx, o.Key); err != nil {
				t.Logf("cleaning up bucket %s: %v", bk.Name, err)
			}
		}
	})
	return bk
}

func (s *ObjStores) createBucket(ctx context.Context, typ etcdv1beta2.BackupStorageType, name string) error {
	switch typ {
	case etcdv1beta2.BackupStorageTypeS3:
		tr, err := backend.HTTPTransport(s.S3CA)
		if err != nil {
			return err
		}
		c := s3.New(s3.Options{
			Region: s.S3Region, BaseEndpoint: aws.String(s.S3Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(s.S3AccessKey, s.S3SecretKey, ""),
			HTTPClient:  &http.Client{Transport: tr},
		})
		_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		return err
	case etcdv1beta2.BackupStorageTypeGCS:
		c, err := storage.NewClient(ctx, option.WithEndpoint(s.GCSEndpoint), option.WithoutAuthentication())
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Bucket(name).Create(ctx, "etcd-e2e", nil)
	case etcdv1beta2.BackupStorageTypeABS:
		cred, err := azblob.NewSharedKeyCredential(s.ABSAccount, s.ABSKey)
		if err != nil {
			return err
		}
		c, err := azblob.NewClientWithSharedKeyCredential(s.ABSEndpoint, cred, nil)
		if err != nil {
			return err
		}
		_, err = c.CreateContainer(ctx, name, nil)
		return err
	}
	return fmt.Errorf("unknown storage type %q", typ)
}

// SecretData is the coreos credentials Secret for the bucket's provider: an awsSecret
// (`credentials` and `config` files), a gcpSecret (`access-token`; fake-gcs-server accepts any)
// or an absSecret (`storage-account`, `storage-key`).
func (b *Bucket) SecretData() map[string][]byte {
	s := b.stores
	switch b.Type {
	case etcdv1beta2.BackupStorageTypeS3:
		return map[string][]byte{
			etcdv1beta2.AWSSecretCredentialsFileName: fmt.Appendf(nil,
				"[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", s.S3AccessKey, s.S3SecretKey),
			etcdv1beta2.AWSSecretConfigFileName: fmt.Appendf(nil, "[default]\nregion = %s\n", s.S3Region),
		}
	case etcdv1beta2.BackupStorageTypeGCS:
		return map[string][]byte{etcdv1beta2.GCPAccessToken: []byte("fake-token")}
	default:
		return map[string][]byte{
			etcdv1beta2.AzureSecretStorageAccount: []byte(s.ABSAccount),
			etcdv1beta2.AzureSecretStorageKey:     []byte(s.ABSKey),
		}
	}
}

// CreateSecret creates the credentials Secret (SecretData) as ns/name.
func (b *Bucket) CreateSecret(t testing.TB, f *Framework, ns, name string) {
	t.Helper()
	f.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: b.SecretData()})
}

// Path is the coreos storage path "<bucket>/<key>".
func (b *Bucket) Path(key string) string { return b.Name + "/" + key }

// Source is the storage block of an EtcdBackup, EtcdBackupSchedule or EtcdRestore for key in
// this bucket, with the credentials Secret secretName (CreateSecret).
func (b *Bucket) Source(key, secretName string) etcdv1beta2.BackupSource {
	s := b.stores
	switch b.Type {
	case etcdv1beta2.BackupStorageTypeS3:
		return etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{
			Path: b.Path(key), AWSSecret: secretName, Endpoint: s.S3Endpoint, ForcePathStyle: true,
		}}
	case etcdv1beta2.BackupStorageTypeGCS:
		return etcdv1beta2.BackupSource{GCS: &etcdv1beta2.GCSSource{
			Path: b.Path(key), GCPSecret: secretName, Endpoint: s.GCSEndpoint,
		}}
	default:
		return etcdv1beta2.BackupSource{ABS: &etcdv1beta2.ABSSource{
			Path: b.Path(key), ABSSecret: secretName, Endpoint: s.ABSEndpoint,
		}}
	}
}

// FactoryConfig is the pkg/backend/factory configuration of the bucket, as the operators build it
// from Source and SecretData.
func (b *Bucket) FactoryConfig() factory.Config {
	s := b.stores
	cfg := factory.Config{Type: factory.Type(b.Type), Bucket: b.Name}
	switch b.Type {
	case etcdv1beta2.BackupStorageTypeS3:
		cfg.Secret, cfg.Endpoint, cfg.ForcePathStyle, cfg.CABundle = b.SecretData(), s.S3Endpoint, true, s.S3CA
	case etcdv1beta2.BackupStorageTypeGCS:
		cfg.Endpoint, cfg.Anonymous = s.GCSEndpoint, true
	default:
		cfg.Secret, cfg.Endpoint = b.SecretData(), s.ABSEndpoint
	}
	return cfg
}

// Backend is the bucket as a backend.Backend on the host (keys relative to the bucket), closed
// with the test.
func (b *Bucket) Backend() backend.Backend { return b.b }

// Keys lists the keys under prefix, sorted.
func (b *Bucket) Keys(t testing.TB, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs, err := b.b.List(ctx, prefix)
	if err != nil {
		t.Fatalf("listing %s in %s: %v", prefix, b.Name, err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// Download writes the object key to file and returns its hex sha256 and size.
func (b *Bucket) Download(t testing.TB, key, file string) (sha string, size int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := b.b.Get(ctx, key)
	if err != nil {
		t.Fatalf("downloading %s: %v", key, err)
	}
	defer r.Close()
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(out, h), r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("downloading %s/%s to %s: %v", b.Name, key, file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), size
}

// FlipByte corrupts the object key in place: the byte at offset (negative: from the end) is
// inverted and the object rewritten under the same key.
func (b *Bucket) FlipByte(t testing.TB, key string, offset int64) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "object")
	_, size := b.Download(t, key, file)
	if offset < 0 {
		offset += size
	}
	if offset < 0 || offset >= size {
		t.Fatalf("FlipByte: offset %d outside %s/%s (%d bytes)", offset, b.Name, key, size)
	}
	fh, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	one := make([]byte, 1)
	if _, err := fh.ReadAt(one, offset); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0xff
	if _, err := fh.WriteAt(one, offset); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := b.b.Put(ctx, key, fh); err != nil {
		t.Fatalf("rewriting %s/%s: %v", b.Name, key, err)
	}
}

// Upload stores the file under key (replacing any object there), as a backup made elsewhere.
func (b *Bucket) Upload(t testing.TB, key, file string) {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := b.b.Put(ctx, key, fh); err != nil {
		t.Fatalf("uploading %s to %s/%s: %v", file, b.Name, key, err)
	}
}

// Delete removes the object key (a missing key is not an error).
func (b *Bucket) Delete(t testing.TB, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.b.Delete(ctx, key); err != nil {
		t.Fatalf("deleting %s/%s: %v", b.Name, key, err)
	}
}
