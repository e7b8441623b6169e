package restoreseed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend/factory"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestRestorePointInTime: the agent restores a backup brought to a revision, and to the newest
// captured one, by the capture that followed it: etcd run on the restored data serves the
// source's key count and HashKV at that revision (raised by the revision bump), and the result
// says what was replayed. A target past the capture fails NotCaptured, with no data dir.
func TestRestorePointInTime(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	src := e.Client(t)
	ctx := t.Context()
	st, err := src.Status(ctx, e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	id := snapshot.Identity{Namespace: "ns", Cluster: "c", ClusterID: st.Header.ClusterId}
	snapshottest.Put(t, src, "key-", keys, 100)
	bucket := t.TempDir()
	b, err := factory.New(ctx, factory.Config{Type: factory.Local, Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "backups/c"
	bk, err := snapshot.Take(ctx, &snapshot.Config{
		Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
		Key: func(rev int64, at time.Time) string { return snapshot.ClusterKey(prefix, id, rev, at) },
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := capture.New(capture.Config{Client: src, Backend: b, Prefix: prefix, Identity: id, StartRevision: bk.Member.Revision + 1, SegmentInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	snapshottest.Put(t, src, "after-", 200, 50) // revisions R+1 to R+200
	mid := bk.Member.Revision + 200
	if _, err := src.Delete(ctx, "key-", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	end := mid + 1
	err = poll.Until(ctx, 20*time.Millisecond, 20*time.Second, func(context.Context) (bool, error) {
		p := c.Progress()
		return p.UploadedRevision >= end, fmt.Errorf("capture progress %+v", p)
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("capture: %v", err)
	}

	for name, tc := range map[string]struct {
		target capture.Target
		rev    int64
		exact  bool
	}{
		"revision": {capture.Target{Revision: mid}, mid, true},
		"newest":   {capture.Target{}, end, false},
	} {
		t.Run(name, func(t *testing.T) {
			o := options(t, bucket, bk.Key, Expect{Size: bk.Size, SHA256: bk.SHA256})
			o.PointInTime, o.BumpRevision = &tc.target, 1000
			res := Restore(ctx, o)
			if res.Outcome != OutcomeRestored || res.PointInTime == nil {
				t.Fatalf("restore: %+v", res)
			}
			if p := res.PointInTime; p.Revision != tc.rev || p.Revisions != tc.rev-bk.Member.Revision || p.Exact != tc.exact || p.Time == "" {
				t.Fatalf("replayed %+v, want revision %d (%d revisions), exact %v", p, tc.rev, tc.rev-bk.Member.Revision, tc.exact)
			}
			if res.BackupRevision != tc.rev || res.Revision != tc.rev+1000 {
				t.Fatalf("result revisions %d (backup %d), want %d bumped from %d", res.Revision, res.BackupRevision, tc.rev+1000, tc.rev)
			}
			want, err := src.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(tc.rev))
			if err != nil {
				t.Fatal(err)
			}
			r := snapshottest.StartEtcd(t, o.DataDir)
			got, err := r.Client(t).Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if got.Count != want.Count || res.Keys != want.Count || got.Header.Revision != res.Revision {
				t.Fatalf("restored etcd serves %d keys at %d (agent says %d), the source had %d at %d", got.Count, got.Header.Revision, res.Keys, want.Count, tc.rev)
			}
			h, err := r.Client(t).HashKV(ctx, r.Endpoint, res.Revision)
			if err != nil || h.Hash != res.HashKV {
				t.Fatalf("restored etcd's HashKV %v, %v; the agent computed %d", h, err, res.HashKV)
			}
		})
	}

	o := options(t, bucket, bk.Key, Expect{Size: bk.Size, SHA256: bk.SHA256})
	o.PointInTime = &capture.Target{Revision: end + 5}
	if res := Restore(ctx, o); res.Outcome != OutcomeFailed || res.Reason != etcdv1beta2.ReasonNotCaptured {
		t.Fatalf("restore past the capture: %+v, want Failed NotCaptured", res)
	}
	if _, err := ParseRestoreArgs([]string{"--location", "x", "--to-revision", "5"}); err == nil || !strings.Contains(err.Error(), "need --point-in-time") {
		t.Fatalf("--to-revision without --point-in-time: %v", err)
	}
}
