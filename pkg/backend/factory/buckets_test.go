package factory

import (
	"context"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"google.golang.org/api/option"
)

// createGCSBucket creates bucket on the emulator at endpoint (plain HTTP) and removes it, with
// whatever the test left in it, when the test ends.
func createGCSBucket(t *testing.T, endpoint, bucket string) {
	t.Helper()
	c, err := storage.NewClient(t.Context(), option.WithEndpoint(endpoint), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	bh := c.Bucket(bucket)
	if err := bh.Create(t.Context(), "etcd-suite-test", nil); err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	t.Cleanup(func() {
		defer c.Close()
		ctx := context.Background()
		b, err := New(ctx, Config{Type: GCS, Bucket: bucket, Endpoint: endpoint, Anonymous: true})
		if err == nil {
			infos, _ := b.List(ctx, "")
			for _, info := range infos {
				_ = b.Delete(ctx, info.Key)
			}
			_ = b.Close()
		}
		if err := bh.Delete(ctx); err != nil {
			t.Errorf("deleting bucket %s: %v", bucket, err)
		}
	})
}

// createABSContainer creates the container on Azurite at endpoint (plain HTTP) and deletes it
// when the test ends.
func createABSContainer(t *testing.T, endpoint string, secret map[string][]byte, name string) {
	t.Helper()
	cred, err := container.NewSharedKeyCredential(string(secret["storage-account"]), string(secret["storage-key"]))
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+name, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatalf("creating container %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := c.Delete(context.Background(), nil); err != nil {
			t.Errorf("deleting container %s: %v", name, err)
		}
	})
}
