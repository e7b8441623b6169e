package etcdbackupschedule

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/options"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/capture"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Retry of a capture that stopped: it starts at captureRetryInitial and doubles up to
// captureRetryMax; a capture that stored a segment before it stopped starts over at the
// initial wait.
const (
	captureRetryInitial = time.Second
	captureRetryMax     = time.Minute
	// progressEvery is how often a running capture's progress is copied for status and
	// metrics.
	progressEvery = time.Second
)

// errNoBase: the capture has nothing to continue (no full backup of the cluster, or etcd
// compacted what comes after the newest one and after the last revision captured).
var errNoBase = errors.New("no full backup of the cluster for the capture to continue")

// captures runs the continuous capture of every schedule with spec.continuousCapture: one
// goroutine per schedule, started by the reconciler (ensure) and stopped by it (stop) or when
// the manager stops. It is a leader-elected Runnable, so only the leader captures; a new leader
// resumes each capture after the last revision stored (pkg/capture), with no gap and no
// duplicate. A capture that changes state (starts, stops, needs a full backup) wakes the
// reconciler through events.
type captures struct {
	cache, live client.Reader
	opts        *options.Options
	// events carries a schedule to the controller (a source.Channel).
	events chan event.TypedGenericEvent[*etcdv1beta2.EtcdBackupSchedule]

	mu   sync.Mutex
	ctx  context.Context // the manager's, once Start ran
	runs map[types.NamespacedName]*captureRun
}

func newCaptures(cache, live client.Reader, opts *options.Options) *captures {
	return &captures{cache: cache, live: live, opts: opts, runs: map[types.NamespacedName]*captureRun{},
		events: make(chan event.TypedGenericEvent[*etcdv1beta2.EtcdBackupSchedule], 1024)}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader captures.
func (c *captures) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it starts the captures ensured before it and stops every
// capture when ctx ends.
func (c *captures) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	for _, run := range c.runs {
		c.launch(run)
	}
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	runs := c.runs
	c.runs = map[types.NamespacedName]*captureRun{}
	c.mu.Unlock()
	for _, run := range runs {
		run.halt()
	}
	return nil
}

// captureWanted is what a capture is started from; a change restarts the capture.
type captureWanted struct {
	uid     types.UID
	backup  etcdv1beta2.BackupSpec
	capture etcdv1beta2.ContinuousCaptureSpec
}

// captureRun is the capture of one schedule.
type captureRun struct {
	key    types.NamespacedName
	want   captureWanted
	cancel context.CancelFunc
	done   chan struct{}
	// poke wakes a capture waiting to retry (a full backup it waits for completed).
	poke chan struct{}

	mu sync.Mutex
	st captureState
}

// captureState is where a capture stands, for status and metrics.
type captureState struct {
	// Running is true while the capture watches and stores segments.
	Running bool
	// Reason and Message are the Capturing condition's.
	Reason, Message string
	// NeedsBackup: the capture waits for a new full backup of the cluster.
	NeedsBackup bool
	// Identity and Start are those of the running (or last) capture.
	Identity snapshot.Identity
	Start    int64
	// Progress is the running (or last) capture's.
	Progress capture.Progress
	// Captured and CapturedTime are the newest revision a restore can reach and when it was
	// received: the last revision stored, or the full backup's revision (and time) the
	// capture continues before it stored anything.
	Captured     int64
	CapturedTime time.Time
}

// ensure starts the capture of s, or restarts it when what it captures changed, and returns
// where it stands.
func (c *captures) ensure(s *etcdv1beta2.EtcdBackupSchedule) captureState {
	want := captureWanted{uid: s.UID, backup: *s.Spec.BackupTemplate.Spec.DeepCopy(), capture: *s.Spec.ContinuousCapture.DeepCopy()}
	key := client.ObjectKeyFromObject(s)
	c.mu.Lock()
	run := c.runs[key]
	if run != nil && !reflect.DeepEqual(run.want, want) {
		delete(c.runs, key)
		c.mu.Unlock()
		run.halt()
		c.mu.Lock()
		run = nil
	}
	if run == nil {
		run = &captureRun{key: key, want: want, poke: make(chan struct{}, 1),
			st: captureState{Reason: etcdv1beta2.ReasonWaitingForBackup, Message: "The capture is starting"}}
		c.runs[key] = run
		if c.ctx != nil {
			c.launch(run)
		}
	}
	c.mu.Unlock()
	return run.state()
}

// stop stops the capture of the schedule key, if it runs.
func (c *captures) stop(key types.NamespacedName) {
	c.mu.Lock()
	run := c.runs[key]
	delete(c.runs, key)
	c.mu.Unlock()
	if run != nil {
		run.halt()
		forgetCaptureMetrics(run.labels())
	}
}

// wake makes a capture that waits to retry try again now.
func (c *captures) wake(key types.NamespacedName) {
	c.mu.Lock()
	run := c.runs[key]
	c.mu.Unlock()
	if run != nil {
		select {
		case run.poke <- struct{}{}:
		default:
		}
	}
}

// launch starts run's goroutine; c.mu is held and c.ctx set.
func (c *captures) launch(run *captureRun) {
	ctx, cancel := context.WithCancel(c.ctx)
	run.cancel, run.done = cancel, make(chan struct{})
	log := ctrl.Log.WithName("capture").WithValues("EtcdBackupSchedule", run.key)
	go func() {
		defer close(run.done)
		c.loop(logr.NewContext(ctx, log), run)
	}()
}

// halt stops run's goroutine and waits for it.
func (run *captureRun) halt() {
	if run.cancel != nil {
		run.cancel()
		<-run.done
	}
}

func (run *captureRun) state() captureState {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.st
}

// update changes run's state under its lock.
func (run *captureRun) update(fn func(*captureState)) {
	run.mu.Lock()
	defer run.mu.Unlock()
	fn(&run.st)
}

// notify wakes the reconciler of run's schedule; when the queue is full the periodic pass
// reads the state instead.
func (c *captures) notify(run *captureRun) {
	s := &etcdv1beta2.EtcdBackupSchedule{}
	s.Namespace, s.Name = run.key.Namespace, run.key.Name
	select {
	case c.events <- event.TypedGenericEvent[*etcdv1beta2.EtcdBackupSchedule]{Object: s}:
	default:
	}
}

// loop runs the capture of one schedule until ctx ends: each attempt resolves the cluster and
// the store afresh, finds where to start, and captures until the capture stops; then it waits
// (with backoff, or until poked) and tries again.
func (c *captures) loop(ctx context.Context, run *captureRun) {
	log := logr.FromContextOrDiscard(ctx)
	wait := captureRetryInitial
	var compacted compaction // etcd's compaction, as the last capture met it
	for {
		stored, err := c.attempt(ctx, run, &compacted)
		if ctx.Err() != nil {
			return
		}
		reason, msg, needsBackup := captureFailure(err)
		run.update(func(st *captureState) {
			st.Running, st.Reason, st.Message, st.NeedsBackup = false, reason, msg, needsBackup
		})
		setCaptureUp(run.labels(), false)
		c.notify(run)
		if stored {
			wait = captureRetryInitial
		}
		log.Info("Capture stopped; retrying", "reason", reason, "error", err.Error(), "retryIn", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-run.poke:
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, captureRetryMax)
	}
}

// attempt captures the schedule's cluster once, until the capture stops; stored says whether it
// stored a segment. compacted carries etcd's compaction from one attempt to the next.
func (c *captures) attempt(ctx context.Context, run *captureRun, compacted *compaction) (stored bool, err error) {
	ns, spec := run.key.Namespace, &run.want.backup
	tgt, err := backuptarget.Resolve(ctx, c.cache, c.live, ns, spec, c.opts.AllowedEtcdEndpoints)
	if err != nil {
		return false, err
	}
	store, err := backuptarget.OpenStore(ctx, c.cache, ns, spec, c.opts.Ambient)
	if err != nil {
		return false, err
	}
	defer store.Close()
	scfg := &snapshot.Config{Endpoints: tgt.Endpoints, Addrs: tgt.Addrs, Access: tgt.Access,
		DialTimeout: c.opts.EtcdDialTimeout, RequestTimeout: c.opts.EtcdRequestTimeout}
	members, err := snapshot.Members(ctx, scfg)
	if err != nil {
		return false, err
	}
	m, err := snapshot.Pick(members)
	if err != nil {
		return false, err
	}
	id, err := backuptarget.Identity(ctx, c.cache, ns, spec, m.ClusterID)
	if err != nil {
		return false, err
	}
	from, err := findStart(ctx, store.Backend, store.Key, id, compacted.floor(id))
	if err != nil {
		return false, err
	}
	cli, err := clientv3.New(tgt.ClientConfig(c.opts.EtcdDialTimeout))
	if err != nil {
		return false, fmt.Errorf("%w: creating etcd client for %v: %w", snapshot.ErrNoHealthyMember, tgt.Endpoints, err)
	}
	defer cli.Close()
	cp, err := capture.New(captureConfig(&run.want.capture, capture.Config{
		Client: cli, Backend: store.Backend, Prefix: store.Key, Identity: id, StartRevision: from.revision,
		Logger: logr.FromContextOrDiscard(ctx),
	}))
	if err != nil {
		return false, err
	}
	run.update(func(st *captureState) {
		*st = captureState{Running: true, Reason: etcdv1beta2.ReasonCapturing, Identity: id, Start: from.revision,
			Captured: from.revision - 1, CapturedTime: from.continued,
			Message: fmt.Sprintf("Capturing %s from revision %d (%s)", id.Describe(), from.revision, from.why)}
	})
	setCaptureUp(run.labels(), true)
	c.notify(run)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { run.follow(cp, done) })
	err = cp.Run(ctx)
	close(done)
	wg.Wait()
	run.record(cp.Progress())
	if ce, ok := errors.AsType[*capture.CompactedError](err); ok {
		*compacted = compaction{id: id, revision: ce.CompactRevision}
	}
	return cp.Progress().Segments > 0, err
}

// compaction is etcd's compaction revision as a capture of cluster id met it.
type compaction struct {
	id       snapshot.Identity
	revision int64
}

// floor is the compaction revision that applies to a capture of cluster id: none for another
// cluster (a cluster re-created under the same name starts at revision 1 again).
func (c compaction) floor(id snapshot.Identity) int64 {
	if c.id != id {
		return 0
	}
	return c.revision
}

// follow copies cp's progress into run's state and the metrics until done closes.
func (run *captureRun) follow(cp *capture.Capturer, done <-chan struct{}) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			run.record(cp.Progress())
		}
	}
}

// record stores p in run's state and the metrics.
func (run *captureRun) record(p capture.Progress) {
	var prev capture.Progress
	run.update(func(st *captureState) {
		prev, st.Progress = st.Progress, p
		if p.Segments > 0 && p.UploadedRevision > st.Captured {
			st.Captured, st.CapturedTime = p.UploadedRevision, p.UploadedTime
		}
	})
	observeCapture(run.labels(), p, prev)
}

// captureConfig applies the schedule's tuning to cfg.
func captureConfig(spec *etcdv1beta2.ContinuousCaptureSpec, cfg capture.Config) capture.Config {
	if spec.SegmentIntervalSeconds != nil {
		cfg.SegmentInterval = time.Duration(*spec.SegmentIntervalSeconds) * time.Second
	}
	if spec.MaxSegmentSize != nil {
		cfg.SegmentMaxBytes = int(spec.MaxSegmentSize.Value())
	}
	if spec.MaxBufferedSize != nil {
		cfg.MaxBufferedBytes = spec.MaxBufferedSize.Value()
	}
	return cfg
}
