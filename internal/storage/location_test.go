package storage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// sources is one storage block of every form the API has, with every field set.
func sources() map[string]struct {
	typ  etcdv1beta2.BackupStorageType
	src  etcdv1beta2.BackupSource
	want Location
} {
	ca := &etcdv1beta2.SecretKeySelector{Name: "private-ca", Key: "bundle.pem"}
	return map[string]struct {
		typ  etcdv1beta2.BackupStorageType
		src  etcdv1beta2.BackupSource
		want Location
	}{
		"s3": {etcdv1beta2.BackupStorageTypeS3,
			etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bk/team/etcd.backup", AWSSecret: "aws", Endpoint: "https://minio.example:9000", ForcePathStyle: true, EndpointCA: ca}},
			Location{Type: "S3", Bucket: "bk", Key: "team/etcd.backup", Endpoint: "https://minio.example:9000", ForcePathStyle: true, Secret: "aws", CA: ca}},
		"abs, CA key defaulted": {etcdv1beta2.BackupStorageTypeABS,
			etcdv1beta2.BackupSource{ABS: &etcdv1beta2.ABSSource{Path: "ctr/etcd", ABSSecret: "azure", Endpoint: "https://azurite:10000/acct", EndpointCA: &etcdv1beta2.SecretKeySelector{Name: "ca"}}},
			Location{Type: "ABS", Bucket: "ctr", Key: "etcd", Endpoint: "https://azurite:10000/acct", Secret: "azure", CA: &etcdv1beta2.SecretKeySelector{Name: "ca", Key: "ca.crt"}}},
		"gcs, ambient credentials": {etcdv1beta2.BackupStorageTypeGCS,
			etcdv1beta2.BackupSource{GCS: &etcdv1beta2.GCSSource{Path: "/bk/a/b/c"}},
			Location{Type: "GCS", Bucket: "bk", Key: "a/b/c"}},
		"oss, coreos form": {etcdv1beta2.BackupStorageTypeOSS,
			etcdv1beta2.BackupSource{OSS: &etcdv1beta2.OSSSource{Path: "my-etcd-backups-bucket/etcd.backup", OSSSecret: "my-oss-credentials", Endpoint: "http://oss-cn-hangzhou.aliyuncs.com"}},
			Location{Type: "OSS", Bucket: "my-etcd-backups-bucket", Key: "etcd.backup", Endpoint: "http://oss-cn-hangzhou.aliyuncs.com", Secret: "my-oss-credentials"}},
		"s3, encrypted and locked": {etcdv1beta2.BackupStorageTypeS3,
			etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bk/enc", AWSSecret: "aws", ObjectLock: &etcdv1beta2.S3ObjectLock{Mode: "Compliance", RetainDays: 30}},
				Encryption: &etcdv1beta2.BackupEncryption{SecretName: "age-keys"}},
			Location{Type: "S3", Bucket: "bk", Key: "enc", Secret: "aws", Encryption: "age-keys", ObjectLock: &etcdv1beta2.S3ObjectLock{Mode: "Compliance", RetainDays: 30}}},
		"oss, CA": {etcdv1beta2.BackupStorageTypeOSS,
			etcdv1beta2.BackupSource{OSS: &etcdv1beta2.OSSSource{Path: "bk/nightly", OSSSecret: "oss", EndpointCA: ca}},
			Location{Type: "OSS", Bucket: "bk", Key: "nightly", Secret: "oss", CA: ca}},
		"pvc, the server's Secret": {etcdv1beta2.BackupStorageTypePVC,
			etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCSource{ClaimName: "etcd-backups", Path: "team/nightly"}, Encryption: &etcdv1beta2.BackupEncryption{SecretName: "age-keys"}},
			Location{Type: "PVC", Bucket: "etcd-backups", Key: "team/nightly", Secret: backupvolume.Name("etcd-backups"), Encryption: "age-keys"}},
	}
}

// TestLocationRoundTrip: every spec form becomes the same Location after each of the forms a
// location takes on its way to the seed agent (the status URL, the pinned annotation, the
// agent's flag), and the Secrets it names reach the agent as mounted files.
func TestLocationRoundTrip(t *testing.T) {
	for name, tc := range sources() {
		t.Run(name, func(t *testing.T) {
			l, err := FromSource(tc.typ, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l, tc.want) {
				t.Fatalf("FromSource = %+v, want %+v", l, tc.want)
			}
			back, err := Decode(l.Encode())
			if err != nil || !reflect.DeepEqual(back, l) {
				t.Fatalf("Decode(Encode) = %+v, %v; want %+v", back, err, l)
			}
			// The storage block of a cluster's bootstrap.restore.source.
			if again, err := FromSource(tc.typ, l.Block()); err != nil || !reflect.DeepEqual(again, l) {
				t.Fatalf("FromSource(Block) = %+v, %v; want %+v", again, err, l)
			}
			// A status URL read back in the store of the same block.
			at, err := l.WithKey("other/key").At(l.URL())
			if err != nil || !reflect.DeepEqual(at, l) {
				t.Fatalf("At(URL) = %+v, %v; want %+v", at, err, l)
			}
			// The Secrets, mounted as the seed pod mounts them, read as the agent reads them.
			root := t.TempDir()
			_, mounts := PodSecrets(l, root)
			for _, m := range mounts {
				writeSecret(t, m.MountPath, map[string]string{"credentials": "creds of " + filepath.Base(m.MountPath), "bundle.pem": "pem", "ca.crt": "pem",
					etcdv1beta2.EncryptionIdentityKey: testIdentity})
			}
			if enc, err := l.encoding(t.Context(), DirSecrets{Root: root}); err != nil || (l.Encryption != "") != (len(enc.Identities) == 1 && len(enc.Write.Recipients) == 1) {
				t.Errorf("encoding %+v, %v: want the mounted identity exactly when the block names encryption", enc, err)
			}
			cfg, err := l.Config(t.Context(), DirSecrets{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if l.Secret != "" && string(cfg.Secret["credentials"]) != "creds of "+l.Secret {
				t.Errorf("credentials %q, want those of %s", cfg.Secret["credentials"], l.Secret)
			}
			if (l.CA != nil) != (string(cfg.CABundle) == "pem") || cfg.Bucket != l.Bucket || cfg.Endpoint != l.Endpoint || cfg.ForcePathStyle != l.ForcePathStyle ||
				(l.ObjectLock != nil) != (cfg.ObjectLockMode == "Compliance" && cfg.ObjectLockDays == 30) {
				t.Errorf("config %+v from %+v", cfg, l)
			}
		})
	}
}

// TestDecodeLegacyPin: a restore the previous release pinned (a BackupSpec JSON) still decodes.
func TestDecodeLegacyPin(t *testing.T) {
	raw, _ := json.Marshal(etcdv1beta2.BackupSpec{StorageType: "S3", BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bk/k", AWSSecret: "aws", Endpoint: "http://m:9000", ForcePathStyle: true}}})
	l, err := Decode(string(raw))
	want := Location{Type: "S3", Bucket: "bk", Key: "k", Endpoint: "http://m:9000", ForcePathStyle: true, Secret: "aws"}
	if err != nil || !reflect.DeepEqual(l, want) {
		t.Fatalf("Decode(legacy) = %+v, %v; want %+v", l, err, want)
	}
}

func TestBadLocations(t *testing.T) {
	for name, tc := range map[string]struct {
		typ etcdv1beta2.BackupStorageType
		src etcdv1beta2.BackupSource
	}{
		"no block":      {"S3", etcdv1beta2.BackupSource{GCS: &etcdv1beta2.GCSSource{Path: "a/b"}}},
		"no oss block":  {"OSS", etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "a/b"}}},
		"no key":        {"GCS", etcdv1beta2.BackupSource{GCS: &etcdv1beta2.GCSSource{Path: "bucket"}}},
		"unknown store": {"FTP", etcdv1beta2.BackupSource{}},
	} {
		if _, err := FromSource(tc.typ, tc.src); reason.Of(err) != etcdv1beta2.ReasonInvalidSpec {
			t.Errorf("%s: %v, want InvalidSpec", name, err)
		}
	}
	for _, s := range []string{`{}`, `{"type":"S3","bucket":"b"}`, `{"type":"Local","bucket":"b","key":"k"}`, `not json`} {
		if _, err := Decode(s); err == nil {
			t.Errorf("Decode(%s) accepted", s)
		}
	}
	if _, err := (Location{Type: "S3"}).At("GCS://b/k"); reason.Of(err) != etcdv1beta2.ReasonBackupNotFound {
		t.Errorf("a URL of another store: %v, want BackupNotFound", err)
	}
	l := Location{Type: "S3", Bucket: "b", Key: "k", CA: &etcdv1beta2.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
	root := t.TempDir()
	if _, err := l.Config(t.Context(), DirSecrets{Root: root}); reason.Of(err) != etcdv1beta2.ReasonSecretNotFound {
		t.Errorf("CA Secret not mounted: %v, want SecretNotFound", err)
	}
	// An optional Secret volume (PodSecrets) whose Secret does not exist: an empty directory.
	if err := os.MkdirAll(filepath.Join(root, "ca"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Config(t.Context(), DirSecrets{Root: root}); reason.Of(err) != etcdv1beta2.ReasonSecretNotFound {
		t.Errorf("CA Secret mounted empty: %v, want SecretNotFound", err)
	}
	writeSecret(t, filepath.Join(root, "ca"), map[string]string{"other": "x"})
	if _, err := l.Config(t.Context(), DirSecrets{Root: root}); reason.Of(err) != etcdv1beta2.ReasonInvalidSpec {
		t.Errorf("CA Secret without the key: %v, want InvalidSpec", err)
	}
}

// writeSecret lays out a Secret volume as the kubelet does: files in a ..data directory and a
// symlink per key.
func writeSecret(t *testing.T, dir string, data map[string]string) {
	t.Helper()
	real := filepath.Join(dir, "..2026_11_23_00_00_00.000")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(real), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(real, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
}
