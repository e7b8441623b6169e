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
	env := backendtest.Env(t, "ETCD_SUITE_ABS_ENDPOINT", "ETCD_SUITE_ABS_ACCOUNT", "ETCD_SUITE_ABS_KEY")
	ctx := t.Context()
	b, err := New(ctx, Config{
		Container:    backendtest.UniqueName("acceptance-"),
		Account:      env["ETCD_SUITE_ABS_ACCOUNT"],
		Key:          SharedKey(env["ETCD_SUITE_ABS_KEY"]),
		Endpoint:     env["ETCD_SUITE_ABS_ENDPOINT"],
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
