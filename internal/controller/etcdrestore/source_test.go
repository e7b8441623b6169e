package etcdrestore

import (
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

func TestKeyInfo(t *testing.T) {
	at := time.Date(2026, 11, 22, 2, 51, 0, 0, time.UTC)
	key := snapshot.ObjectKey("demo/etcd.backup", 634, at)
	info, ok := keyInfo(key)
	if !ok || !info.Time.Equal(at) || info.Revision != 634 {
		t.Fatalf("keyInfo(%q) = %+v, %t", key, info, ok)
	}
	for _, key := range []string{"etcd.backup", "db/etcd.backup", "x_20261122T025100Z_v12"} {
		if _, ok := keyInfo(key); ok {
			t.Errorf("keyInfo(%q) parsed a key snapshot.ObjectKey did not write", key)
		}
	}
}
