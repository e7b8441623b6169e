package capture

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/backend/local"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume"
	"github.com/etcd-operator/etcd-operator/pkg/backend/volume/volumetest"
)

// volumeBackend is a client of a volume server (storageType PVC) on a directory, over HTTPS
// pinned to the server's own certificate, as the operators reach a backup claim.
func volumeBackend(t *testing.T) backend.Backend {
	t.Helper()
	dir, err := local.New(t.Context(), local.Config{Dir: filepath.Join(t.TempDir(), "claim")})
	if err != nil {
		t.Fatal(err)
	}
	creds := volumetest.Serve(t, dir)
	cfg, err := volume.ClientConfig(creds.Data())
	if err != nil {
		t.Fatal(err)
	}
	c, err := volume.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCaptureToAVolumeServer: continuous capture into a PersistentVolumeClaim's server holds
// every revision once (Check) and exactly what a watch of etcd reports, as into an object store.
func TestCaptureToAVolumeServer(t *testing.T) {
	b := volumeBackend(t)
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	if err := startLoad(cli, 3, 300)(); err != nil {
		t.Fatal(err)
	}
	r := run(t, testConfig(t, cli, b, id, start))
	if err := startLoad(cli, 3, 300)(); err != nil {
		t.Fatal(err)
	}
	last := revision(t, cli)
	r.waitUploaded(t, last, 20*time.Second)
	if err := r.stop(t); err == nil {
		t.Fatal("Run returned nil after its context ended")
	}
	rep := checkOK(t, b, id, start, last)
	if events := compareWithEtcd(t, cli, b, id, start, last); events != rep.Events {
		t.Fatalf("compared %d events, Check counted %d", events, rep.Events)
	}
	t.Logf("captured revisions %d-%d into a volume server: %d events in %d segments", start, last, rep.Events, rep.Segments)
}
