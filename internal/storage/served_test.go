package storage

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume/volumetest"
)

// startingServer plays the backup operator starting a claim's server: its Secret is missing for
// the first reads, then names a port nothing listens on yet (the pod not ready), then the
// server's real address.
type startingServer struct {
	reads      atomic.Int32
	dead, live map[string][]byte
}

func (s *startingServer) Data(_ context.Context, name string) (map[string][]byte, error) {
	switch n := s.reads.Add(1); {
	case n <= 2:
		return nil, reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "secret %s not found", name)
	case n <= 4:
		return s.dead, nil
	default:
		return s.live, nil
	}
}

func newStartingServer(t *testing.T) *startingServer {
	t.Helper()
	dir, err := local.New(t.Context(), local.Config{Dir: filepath.Join(t.TempDir(), "claim")})
	if err != nil {
		t.Fatal(err)
	}
	creds := volumetest.Serve(t, dir)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	_ = closed.Close()
	s := &startingServer{}
	live := creds.URL
	creds.URL = "https://" + strings.Replace(deadAddr, "127.0.0.1", "localhost", 1)
	s.dead = creds.Data()
	creds.URL = live
	s.live = creds.Data()
	return s
}

// TestOpenServedWaitsForAStartingServer: a restore's read of a claim whose server is still
// starting (no Secret yet, then a pod that does not answer) waits for it and gets a store that
// reads, instead of failing at once; with too short a wait it fails StorageUnreachable, and
// other storage types are not waited for.
func TestOpenServedWaitsForAStartingServer(t *testing.T) {
	loc := Location{Type: etcdv1beta2.BackupStorageTypePVC, Bucket: "etcd-backups", Key: "main/nightly", Secret: "etcd-backup-volume-x"}
	start := time.Now()
	store, err := OpenServed(t.Context(), loc, newStartingServer(t), AmbientPolicy{}, time.Minute)
	if err != nil {
		t.Fatalf("OpenServed: %v", err)
	}
	defer store.Close()
	if _, err := store.List(t.Context(), "main/"); err != nil {
		t.Fatalf("List through the store: %v", err)
	}
	if took := time.Since(start); took < 3*time.Second || took > 20*time.Second {
		t.Errorf("OpenServed took %s, want about 4 s (four failed reads a second apart)", took)
	}
	if _, err := OpenServed(t.Context(), loc, newStartingServer(t), AmbientPolicy{}, 2*time.Second); reason.Of(err) != etcdv1beta2.ReasonStorageUnreachable {
		t.Errorf("with a 2 s wait: %v, want StorageUnreachable", err)
	}
	s3 := Location{Type: etcdv1beta2.BackupStorageTypeS3, Bucket: "b", Key: "k", Secret: "aws"}
	start = time.Now()
	if _, err := OpenServed(t.Context(), s3, newStartingServer(t), AmbientPolicy{}, time.Minute); err == nil || time.Since(start) > time.Second {
		t.Errorf("S3 with a missing Secret: %v after %s, want an error at once", err, time.Since(start))
	}
}
