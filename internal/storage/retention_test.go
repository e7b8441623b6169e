package storage

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/memory"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
)

// stalled is a store whose listing never answers until the caller gives up.
type stalled struct{ backend.Backend }

func (stalled) List(ctx context.Context, _ string) ([]backend.ObjectInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRetentionStalledStore: a store that never answers the listing holds the reconcile only
// until the retention deadline, and the object hears of it in a Warning event.
func TestRetentionStalledStore(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &Retention{Timeout: 200 * time.Millisecond}
	store := &Store{Backend: stalled{memory.New()}, Location: Location{Type: "S3", Bucket: "b", Key: "p/etcd"}}
	start := time.Now()
	r.Apply(t.Context(), rec, &etcdv1beta2.EtcdBackup{}, store, retention.Request{Prefix: "p/etcd", Policy: retention.Policy{MaxBackups: 1}, Now: start})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("retention against a stalled store took %s", took)
	}
	select {
	case ev := <-rec.Events:
		t.Logf("event: %s", ev)
	default:
		t.Fatal("no RetentionFailed event")
	}
}
