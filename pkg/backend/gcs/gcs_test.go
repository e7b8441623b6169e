package gcs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// TestAcceptanceFakeGCS runs the acceptance test against the fake-gcs-server that
// hack/objstores.sh started, on a fresh bucket, with small chunks and list pages so resumable
// uploads and pagination are exercised.
func TestAcceptanceFakeGCS(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_GCS_ENDPOINT")
	ctx := t.Context()
	b, err := New(ctx, Config{
		Bucket:       backendtest.UniqueName("acceptance-"),
		Endpoint:     env["OBJSTORE_GCS_ENDPOINT"],
		Anonymous:    true,
		ChunkSize:    4 << 20,
		ListPageSize: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.bucket.Create(ctx, "etcd-suite-test", nil); err != nil {
		t.Fatalf("creating bucket %s: %v", b.cfg.Bucket, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		infos, _ := b.List(ctx, "")
		for _, info := range infos {
			_ = b.Delete(ctx, info.Key)
		}
		if err := b.bucket.Delete(ctx); err != nil {
			t.Errorf("deleting bucket %s: %v", b.cfg.Bucket, err)
		}
		_ = b.Close()
	})
	backendtest.AcceptanceTest(t, b)
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"minimal", Config{Bucket: "b"}, false},
		{"no bucket", Config{}, true},
		{"negative chunk", Config{Bucket: "b", ChunkSize: -1}, true},
		{"anonymous with credentials", Config{Bucket: "b", Anonymous: true, Credentials: &Credentials{AccessToken: "t"}}, true},
		{"empty credentials", Config{Bucket: "b", Credentials: &Credentials{}}, true},
	}
	for _, tc := range cases {
		if err := tc.cfg.validate(); (err != nil) != tc.wantErr {
			t.Errorf("%s: validate() = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
}

// TestPermissionDeniedGCS: fake-gcs-server accepts any credentials, so a plain HTTP server that
// answers every request 403 like the JSON API stands in for a store that refuses them.
func TestPermissionDeniedGCS(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"code":403,"message":"caller does not have storage.objects.get access"}}`))
	}))
	defer srv.Close()
	b, err := New(t.Context(), Config{Bucket: "b", Endpoint: srv.URL + "/storage/v1/", Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.PermissionDenied(t, b)
}
