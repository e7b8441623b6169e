package capture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// Errors Run returns; match with errors.Is.
var (
	// ErrCompacted: etcd compacted the revision the capture needed next. The caller takes a
	// new full snapshot and captures from its revision + 1. The error wraps etcd's
	// rpctypes.ErrCompacted too.
	ErrCompacted = errors.New("capture: the revision to capture next is compacted")
	// ErrBufferFull: the store failed for so long that the closed segments waiting for it
	// reached MaxBufferedBytes. Nothing was uploaded out of order; the caller resumes from
	// LastCaptured + 1 (or takes a new snapshot if that is compacted by then).
	ErrBufferFull = errors.New("capture: segments waiting for upload exceed MaxBufferedBytes")
	// ErrConflict: an object other than the segment is stored under the segment's key (two
	// capturers of one cluster, or a foreign writer). Segments are never overwritten.
	ErrConflict = errors.New("capture: a different object exists under the segment's key")
	// ErrClusterChanged: the watch answered from an etcd cluster other than the Identity's
	// (its cluster ID differs): the members behind the client's endpoints were replaced by
	// another cluster (a restore, a re-created cluster). Its revisions are not the captured
	// cluster's and are never appended.
	ErrClusterChanged = errors.New("capture: the watch answered from another etcd cluster")
	// ErrOutOfOrder: the watch delivered a revision other than the next one, which etcd
	// never does: a capture that went on would have a gap or a duplicate.
	ErrOutOfOrder = errors.New("capture: the watch delivered revisions out of order")
)

// CompactedError is the error Run returns when etcd compacted the revision to capture next:
// it wraps ErrCompacted and etcd's own error.
type CompactedError struct {
	// Next is the revision the capture needed next.
	Next int64
	// CompactRevision is etcd's compaction revision: the oldest revision it still keeps
	// changes of is CompactRevision + 1.
	CompactRevision int64
	// Err is etcd's error (rpctypes.ErrCompacted).
	Err error
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%v: watching from revision %d, etcd has compacted up to revision %d: %v", ErrCompacted, e.Next, e.CompactRevision, e.Err)
}

func (e *CompactedError) Unwrap() []error { return []error{ErrCompacted, e.Err} }

// Capturer streams every change of an etcd keyspace into segments (see the package
// documentation). Create it with New and call Run once.
type Capturer struct {
	cfg     Config
	log     logr.Logger
	started atomic.Bool

	// The watch loop's own state.
	open  *Builder
	next  int64       // the revision the watch delivers next
	timer clock.Timer // closes the open segment; nil when it is empty

	// Shared with the uploader and Progress, under mu.
	mu    sync.Mutex
	queue []*Segment // closed, not yet uploaded, in revision order
	prog  Progress
	// openSince is when the open segment's first revision arrived; zero when it is empty.
	openSince time.Time
	// wake tells the uploader that the queue grew.
	wake chan struct{}
}

// New checks cfg, fills in its defaults and returns a Capturer.
func New(cfg Config) (*Capturer, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	open, err := NewBuilder(cfg.Identity)
	if err != nil {
		return nil, err
	}
	c := &Capturer{cfg: cfg, open: open, next: cfg.StartRevision, wake: make(chan struct{}, 1)}
	c.prog.UploadedRevision = cfg.StartRevision - 1
	c.prog.AppendedRevision = cfg.StartRevision - 1
	return c, nil
}

// Run captures until ctx ends or the capture cannot go on. It watches the whole keyspace from
// StartRevision with previous values, appends each revision to the open segment, closes the
// segment SegmentInterval after its first revision arrived or when it reaches SegmentMaxBytes,
// and uploads closed segments one at a time, in revision order, retrying with backoff while
// the watch goes on. A watch that fails for any reason but compaction is restarted from the
// revision after the last one appended.
//
// Run returns an error wrapping ErrCompacted, ErrBufferFull, ErrConflict, ErrClusterChanged or
// ErrOutOfOrder, or, when ctx ends, ctx's error. When ctx ends, or with ErrCompacted or
// ErrClusterChanged (the revisions received are the cluster's, and a disaster may have just
// replaced it), Run first flushes: it closes the open segment and stores what waits, within
// FlushTimeout. Segments not stored by then are dropped (etcd still has their revisions
// unless it compacted them or is gone): the next Capturer starts at LastCaptured + 1.
func (c *Capturer) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("capture: Run called twice")
	}
	c.log = c.cfg.Logger
	if c.log.GetSink() == nil {
		c.log = logr.FromContextOrDiscard(ctx)
	}
	c.log = c.log.WithValues("identity", c.cfg.Identity.Describe())
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	upErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { upErr <- c.uploadLoop(ctx) })
	stop := func(flush bool) {
		cancel()
		wg.Wait()
		c.stopTimer()
		if flush {
			c.flush(parent)
		}
	}
	bo := newBackoff(&c.cfg)
	for {
		from := c.next
		retry, err := c.watch(ctx, upErr)
		if ctx.Err() != nil && parent.Err() != nil {
			stop(true)
			return fmt.Errorf("capture stopped with revision %d next: %w", c.next, parent.Err())
		}
		if !retry {
			stop(errors.Is(err, ErrCompacted) || errors.Is(err, ErrClusterChanged))
			return err
		}
		if c.next > from {
			bo.reset()
		}
		d := bo.wait()
		c.log.Error(err, "Watch failed; restarting it", "fromRevision", c.next, "retryIn", d)
		if err := c.sleep(ctx, d, upErr); err != nil {
			stop(parent.Err() != nil)
			return err
		}
	}
}

// flush closes the open segment and stores the segments that wait, in order, within
// FlushTimeout of a context that is no longer parent's (which has ended).
func (c *Capturer) flush(parent context.Context) {
	if c.cfg.FlushTimeout < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), c.cfg.FlushTimeout)
	defer cancel()
	if c.open.Revisions() > 0 {
		if err := c.closeSegment(); err != nil {
			c.log.Error(err, "Closing the open segment at stop")
		}
	}
	for {
		seg := c.head()
		if seg == nil {
			return
		}
		key := seg.Key(c.cfg.Prefix)
		if err := c.upload(ctx, key, seg); err != nil {
			c.log.Error(err, "Storing the segments at stop failed; the next capture starts after the last one stored", "key", key)
			return
		}
		c.uploaded(key, seg)
	}
}

// watch runs one watch from c.next until it fails; retry says whether another watch may
// succeed.
func (c *Capturer) watch(ctx context.Context, upErr <-chan error) (retry bool, err error) {
	// Require a leader: a member cut off from its cluster ends the watch instead of going
	// silent, and the next watch goes to a member that has one.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := c.cfg.Client.Watch(wctx, "", clientv3.WithPrefix(), clientv3.WithRev(c.next),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	c.log.V(1).Info("Watching", "fromRevision", c.next)
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case err := <-upErr:
			return false, err
		case <-c.timerC():
			if err := c.closeSegment(); err != nil {
				return false, err
			}
		case resp, ok := <-wch:
			switch {
			case !ok:
				return true, errors.New("the watch channel closed")
			case resp.CompactRevision != 0:
				return false, &CompactedError{Next: c.next, CompactRevision: resp.CompactRevision, Err: resp.Err()}
			case resp.Err() != nil:
				return true, fmt.Errorf("watching from revision %d: %w", c.next, resp.Err())
			}
			if err := c.handle(&resp); err != nil {
				return false, err
			}
		}
	}
}

// handle appends the revisions of one watch response. etcd never splits a revision across
// responses (only a watch WithFragment does), so each revision is complete.
func (c *Capturer) handle(resp *clientv3.WatchResponse) error {
	now := c.cfg.Clock.Now()
	if id := resp.Header.ClusterId; id != c.cfg.Identity.ClusterID {
		return fmt.Errorf("%w: cluster ID %016x, capturing %s", ErrClusterChanged, id, c.cfg.Identity.Describe())
	}
	c.mu.Lock()
	c.prog.EtcdRevision = max(c.prog.EtcdRevision, resp.Header.Revision)
	c.mu.Unlock()
	evs := resp.Events
	for len(evs) > 0 {
		rev := evs[0].Kv.ModRevision
		n := 1
		for n < len(evs) && evs[n].Kv.ModRevision == rev {
			n++
		}
		if rev != c.next {
			return fmt.Errorf("%w: revision %d where %d was next", ErrOutOfOrder, rev, c.next)
		}
		events := make([]*mvccpb.Event, n)
		for i, ev := range evs[:n] {
			events[i] = (*mvccpb.Event)(ev)
		}
		if c.open.Revisions() == 0 {
			c.timer = c.cfg.Clock.NewTimer(c.cfg.SegmentInterval)
			c.mu.Lock()
			c.openSince = now
			c.mu.Unlock()
		}
		if err := c.open.Append(rev, now, events); err != nil {
			return err
		}
		c.next = rev + 1
		c.mu.Lock()
		c.prog.AppendedRevision, c.prog.AppendedTime = rev, now
		c.prog.EtcdRevision = max(c.prog.EtcdRevision, rev)
		c.mu.Unlock()
		if c.open.Size() >= c.cfg.SegmentMaxBytes {
			if err := c.closeSegment(); err != nil {
				return err
			}
		}
		evs = evs[n:]
	}
	return nil
}

// closeSegment finishes the open segment and queues it for upload.
func (c *Capturer) closeSegment() error {
	c.stopTimer()
	seg, err := c.open.Finish()
	if err != nil {
		return err
	}
	if c.open.capacity() > 2*c.cfg.SegmentMaxBytes {
		// A huge revision grew the buffer: let it go rather than keep it for every segment.
		if c.open, err = NewBuilder(c.cfg.Identity); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openSince = time.Time{}
	if c.prog.PendingBytes+int64(len(seg.Data)) > c.cfg.MaxBufferedBytes {
		return fmt.Errorf("%w: %d segments of %d bytes wait for upload after revision %d; revisions %d-%d (%d bytes) would exceed %d",
			ErrBufferFull, len(c.queue), c.prog.PendingBytes, c.prog.UploadedRevision,
			seg.Header.FirstRevision, seg.Header.LastRevision, len(seg.Data), c.cfg.MaxBufferedBytes)
	}
	c.queue = append(c.queue, &seg)
	c.prog.PendingSegments, c.prog.PendingBytes = len(c.queue), c.prog.PendingBytes+int64(len(seg.Data))
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *Capturer) timerC() <-chan time.Time {
	if c.timer == nil {
		return nil
	}
	return c.timer.C()
}

func (c *Capturer) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// sleep waits d on the clock, or until ctx ends or the uploader fails.
func (c *Capturer) sleep(ctx context.Context, d time.Duration, upErr <-chan error) error {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("capture stopped with revision %d next: %w", c.next, ctx.Err())
	case err := <-upErr:
		return err
	case <-t.C():
		return nil
	}
}
