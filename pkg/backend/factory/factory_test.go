package factory

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

func TestNew(t *testing.T) {
	awsSecret := map[string][]byte{
		"credentials": []byte("[default]\naws_access_key_id = AKID\naws_secret_access_key = s\n"),
		"config":      []byte("[default]\nregion = eu-west-1\n"),
	}
	absSecret := map[string][]byte{"storage-account": []byte("acct"), "storage-key": []byte("a2V5")}
	gcpSecret := map[string][]byte{"access-token": []byte("tok")}
	testCA := newTestPKI(t).caPEM
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"memory", Config{Type: Memory}, ""},
		{"local with prefix", Config{Type: Local, Bucket: filepath.Join(t.TempDir(), "b"), Prefix: "cluster-a"}, ""},
		{"S3 with awsSecret", Config{Type: S3, Bucket: "b", Secret: awsSecret}, ""},
		{"S3-compatible, ambient credentials", Config{Type: S3, Bucket: "b", Endpoint: "http://127.0.0.1:9000", ForcePathStyle: true}, ""},
		{"ABS with absSecret", Config{Type: ABS, Bucket: "c", Secret: absSecret}, ""},
		{"GCS with gcpSecret", Config{Type: GCS, Bucket: "b", Secret: gcpSecret}, ""},
		{"GCS emulator", Config{Type: GCS, Bucket: "b", Endpoint: "http://127.0.0.1:4443/storage/v1/", Anonymous: true}, ""},
		{"unknown type", Config{Type: "FTP"}, "unknown backend type"},
		{"PVC without the server's Secret", Config{Type: PVC, Bucket: "claim"}, "volume server secret"},
		{"S3 without bucket", Config{Type: S3, Secret: awsSecret}, "Bucket is required"},
		{"S3 with a broken secret", Config{Type: S3, Bucket: "b", Secret: map[string][]byte{}}, `missing key "credentials"`},
		{"ABS with a broken secret", Config{Type: ABS, Bucket: "c", Secret: map[string][]byte{"storage-key": []byte("k")}}, "storage-account"},
		{"GCS with a broken secret", Config{Type: GCS, Bucket: "b", Secret: map[string][]byte{}}, "neither"},
		{"S3 part below the minimum", Config{Type: S3, Bucket: "b", Secret: awsSecret, PartSize: 1 << 20}, "PartSize"},
		{"S3 with a CA bundle", Config{Type: S3, Bucket: "b", Secret: awsSecret, CABundle: testCA}, ""},
		{"ABS with a CA bundle", Config{Type: ABS, Bucket: "c", Secret: absSecret, CABundle: testCA}, ""},
		{"GCS with a CA bundle", Config{Type: GCS, Bucket: "b", Secret: gcpSecret, CABundle: testCA}, ""},
		{"S3 with a CA bundle without certificates", Config{Type: S3, Bucket: "b", Secret: awsSecret, CABundle: []byte("not PEM")}, "CA bundle holds no PEM certificate"},
		{"ABS with a CA bundle without certificates", Config{Type: ABS, Bucket: "c", Secret: absSecret, CABundle: []byte("not PEM")}, "CA bundle holds no PEM certificate"},
		{"GCS with a CA bundle without certificates", Config{Type: GCS, Bucket: "b", Secret: gcpSecret, CABundle: []byte("not PEM")}, "CA bundle holds no PEM certificate"},
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
			defer b.Close()
			if tc.cfg.Type == Memory || tc.cfg.Type == Local {
				if err := b.Put(t.Context(), "k", strings.NewReader("v")); err != nil {
					t.Fatalf("Put: %v", err)
				}
				if _, err := b.Stat(t.Context(), "k"); err != nil {
					t.Fatalf("Stat: %v", err)
				}
				if _, err := b.Stat(t.Context(), "missing"); !backend.IsNotFound(err) {
					t.Fatalf("Stat(missing) = %v, want not found", err)
				}
			}
		})
	}
}

func TestSplitPath(t *testing.T) {
	cases := []struct {
		path, bucket, key string
		wantErr           bool
	}{
		{"mybucket/etcd.backup", "mybucket", "etcd.backup", false},
		{"mybucket/a/b/c", "mybucket", "a/b/c", false},
		{"/mybucket/k", "mybucket", "k", false},
		{"mybucket", "", "", true},
		{"mybucket/", "", "", true},
		{"", "", "", true},
	}
	for _, tc := range cases {
		bucket, key, err := SplitPath(tc.path)
		if (err != nil) != tc.wantErr || bucket != tc.bucket || key != tc.key {
			t.Errorf("SplitPath(%q) = %q, %q, %v; want %q, %q, error %v", tc.path, bucket, key, err, tc.bucket, tc.key, tc.wantErr)
		}
	}
}
