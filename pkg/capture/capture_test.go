package capture

import (
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// s3Backend is a fresh MinIO bucket (skips without hack/objstores.sh).
func s3Backend(t *testing.T) backend.Backend {
	t.Helper()
	return storagetest.NewS3Bucket(t).S3Backend(t)
}

// testConfig is a capture of id into b from start, with short intervals and small segments.
func testConfig(t *testing.T, cli clientv3.Watcher, b backend.Backend, id snapshot.Identity, start int64) Config {
	return Config{
		Client: cli, Backend: b, Prefix: testPrefix, Identity: id, StartRevision: start,
		SegmentInterval: 200 * time.Millisecond, SegmentMaxBytes: 64 << 10,
		RetryInitial: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
	}
}

// TestCaptureMatchesEtcd: a capture into MinIO of a write load (puts, overwrites, deletes,
// range deletes, transactions, leased keys and their revocation) holds every revision once
// (Check), holds exactly what a fresh watch of etcd from the same revision reports, event by
// event with previous values, and replayed onto the keyspace before it gives etcd's keyspace
// after it. Half the load is history when the capture starts (catch-up), half comes during it.
func TestCaptureMatchesEtcd(t *testing.T) {
	b := s3Backend(t)
	cli, id := startEtcd(t)
	if err := workload(t.Context(), cli, 9, 100); err != nil { // the keyspace "in the snapshot"
		t.Fatal(err)
	}
	start := revision(t, cli) + 1
	if err := startLoad(cli, 3, 600)(); err != nil {
		t.Fatal(err)
	}
	history := revision(t, cli)

	began := time.Now()
	r := run(t, testConfig(t, cli, b, id, start))
	r.waitAppended(t, history)
	appended := time.Since(began)
	r.waitUploaded(t, history, 20*time.Second)
	catchUp := time.Since(began)

	wait := startLoad(cli, 3, 600)
	loadBegan := time.Now()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	loadTook := time.Since(loadBegan)
	last := revision(t, cli)
	r.waitUploaded(t, last, 10*time.Second)
	p := r.c.Progress()
	if err := r.stop(t); err == nil {
		t.Fatal("Run returned nil after its context ended")
	}

	rep := checkOK(t, b, id, start, last)
	events := compareWithEtcd(t, cli, b, id, start, last)
	if events != rep.Events || p.Segments != int64(rep.Segments) {
		t.Fatalf("compared %d events, Check counted %d; progress says %d segments, Check read %d", events, rep.Events, p.Segments, rep.Segments)
	}
	segs, err := ListSegments(t.Context(), b, testPrefix, id)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.Size
	}
	t.Logf("captured revisions %d-%d: %d events, %d segments, %d bytes (segment sizes %d..%d)",
		start, last, events, len(segs), p.UploadedBytes, slices.Min(sizes), slices.Max(sizes))
	t.Logf("catch-up of %d revisions of history: appended in %s, uploaded in %s (SegmentInterval %s); live load of %d revisions in %s",
		history-start+1, appended.Round(time.Millisecond), catchUp.Round(time.Millisecond), r.c.cfg.SegmentInterval, last-history, loadTook.Round(time.Millisecond))
	if slices.Max(sizes) > 64<<10+8<<10 {
		t.Fatalf("a segment of %d bytes: more than SegmentMaxBytes and one revision", slices.Max(sizes))
	}
}

// TestCaptureResume: a capture stopped while writes go on, and a new one started at
// LastCaptured + 1, together hold every revision exactly once, as etcd reports them.
func TestCaptureResume(t *testing.T) {
	b := s3Backend(t)
	cli, id := startEtcd(t)
	start := revision(t, cli) + 1
	wait := startLoad(cli, 2, 1000)

	first := run(t, testConfig(t, cli, b, id, start))
	waitFor(t, 20*time.Second, "three segments uploaded", func() (bool, string) {
		p := first.c.Progress()
		return p.Segments >= 3, "not yet"
	})
	_ = first.stop(t)
	stopped := first.c.Progress()
	stored, err := LastCaptured(t.Context(), b, testPrefix, id)
	if err != nil {
		t.Fatal(err)
	}
	resumeAt := stored.LastRevision
	if resumeAt != stopped.UploadedRevision {
		t.Fatalf("LastCaptured = %d, the stopped capture uploaded up to %d", resumeAt, stopped.UploadedRevision)
	}

	second := run(t, testConfig(t, cli, b, id, resumeAt+1))
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	last := revision(t, cli)
	if last <= stopped.AppendedRevision {
		t.Fatalf("the load ended at revision %d, before the first capture stopped (%d): nothing was mid-stream", last, stopped.AppendedRevision)
	}
	second.waitUploaded(t, last, 10*time.Second)
	checkOK(t, b, id, start, last)
	compareWithEtcd(t, cli, b, id, start, last)
	t.Logf("first capture appended up to %d and uploaded up to %d when stopped; the second resumed at %d and reached %d",
		stopped.AppendedRevision, resumeAt, resumeAt+1, last)
}
