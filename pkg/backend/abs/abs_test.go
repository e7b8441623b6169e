package abs

import (
	"context"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/backend/backendtest"
)

// TestAcceptanceAzurite runs the acceptance test against the Azurite that hack/objstores.sh
// started, on a fresh container, with small blocks and list pages so block staging and
// pagination are exercised.
func TestAcceptanceAzurite(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_ABS_ENDPOINT", "OBJSTORE_ABS_ACCOUNT", "OBJSTORE_ABS_KEY")
	ctx := t.Context()
	b, err := New(ctx, Config{
		Container:    backendtest.UniqueName("acceptance-"),
		Account:      env["OBJSTORE_ABS_ACCOUNT"],
		Key:          SharedKey(env["OBJSTORE_ABS_KEY"]),
		Endpoint:     env["OBJSTORE_ABS_ENDPOINT"],
		BlockSize:    4 << 20,
		Concurrency:  3,
		ListPageSize: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.container.Create(ctx, nil); err != nil {
		t.Fatalf("creating container %s: %v", b.cfg.Container, err)
	}
	t.Cleanup(func() {
		if _, err := b.container.Delete(context.Background(), nil); err != nil {
			t.Errorf("deleting container %s: %v", b.cfg.Container, err)
		}
	})
	backendtest.AcceptanceTest(t, b)
}

// TestPermissionDeniedAzurite: a wrong storage key is reported as backend.ErrPermissionDenied.
func TestPermissionDeniedAzurite(t *testing.T) {
	env := backendtest.Env(t, "OBJSTORE_ABS_ENDPOINT", "OBJSTORE_ABS_ACCOUNT", "OBJSTORE_ABS_KEY")
	bad, err := New(t.Context(), Config{
		Container: backendtest.UniqueName("denied-"),
		Account:   env["OBJSTORE_ABS_ACCOUNT"],
		Key:       SharedKey("d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk="),
		Endpoint:  env["OBJSTORE_ABS_ENDPOINT"],
	})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.PermissionDenied(t, bad)
}
