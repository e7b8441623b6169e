// Package workpool runs the operations that stream a whole snapshot (a backup, the check of a
// backup before a restore) outside the reconcile workers: a bounded number of workers, shared in
// turn between namespaces, with a cap per namespace. A tenant whose store or etcd stalls holds
// at most its own share of the workers until its operations' deadlines, never every worker and
// never a reconcile worker, so other namespaces' backups and every other reconcile go on.
//
// A controller submits its object's operation and returns at once; when the operation finishes
// the pool wakes the controller (an event on Events()), whose next pass takes the outcome,
// exactly once, and records it.
package workpool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Func is one operation. It runs in a worker under the pool's context, cancelled when the
// operator stops or the object's operation is cancelled; it must bound itself with its own
// deadline.
type Func func(ctx context.Context) (any, error)

// Outcome is what a finished operation returned.
type Outcome struct {
	Value any
	Err   error
}

// Pool runs operations keyed by object. The zero value is not usable: use New.
type Pool struct {
	workers, perNamespace int
	// newObject makes the object an event about a finished operation carries (only its name
	// and namespace are set).
	newObject func() client.Object
	events    chan event.GenericEvent
	metrics   *poolMetrics

	mu      sync.Mutex
	cond    *sync.Cond
	stopped bool
	jobs    map[types.NamespacedName]*job
	queued  map[string][]*job // by namespace, oldest first
	turn    []string          // namespaces with queued jobs, next first
	running map[string]int    // by namespace
}

type job struct {
	key    types.NamespacedName
	token  string
	fn     Func
	cancel context.CancelFunc // set once the job runs
	done   bool
	out    Outcome
	// until is set on a hold (see Hold): no job, only a time before which key is pending.
	until time.Time
}

// New returns a pool of workers workers, at most perNamespace of them on one namespace's
// operations at a time. name labels the pool's metrics (e.g. "backup"); newObject makes the
// empty object of the controller's kind that the pool's events carry.
func New(name string, workers, perNamespace int, newObject func() client.Object) *Pool {
	p := &Pool{
		workers:      max(1, workers),
		perNamespace: min(max(1, perNamespace), max(1, workers)),
		newObject:    newObject,
		// Buffered so a worker never waits on a slow controller; the controller's source
		// drains it.
		events:  make(chan event.GenericEvent, 1024),
		metrics: metricsFor(name),
		jobs:    map[types.NamespacedName]*job{},
		queued:  map[string][]*job{},
		running: map[string]int{},
	}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Events carries one event for each finished operation, for the controller's source.Channel.
func (p *Pool) Events() <-chan event.GenericEvent { return p.events }

// Take hands over the outcome of key's operation under token once it finished (and forgets
// it); pending says it is still queued or running. An operation under another token (the
// object was deleted and made again under the same name) is cancelled.
func (p *Pool) Take(key types.NamespacedName, token string) (out *Outcome, pending bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[key]
	switch {
	case !ok:
		return nil, false
	case j.token != token:
		p.cancelLocked(key)
		return nil, false
	case !j.until.IsZero():
		if time.Now().Before(j.until) {
			return nil, true
		}
		delete(p.jobs, key)
		return nil, false
	case !j.done:
		return nil, true
	}
	delete(p.jobs, key)
	o := j.out
	return &o, false
}

// Submit queues fn as key's operation under token, cancelling any other operation of key.
func (p *Pool) Submit(key types.NamespacedName, token string, fn Func) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelLocked(key)
	j := &job{key: key, token: token, fn: fn}
	p.jobs[key] = j
	if len(p.queued[key.Namespace]) == 0 {
		p.turn = append(p.turn, key.Namespace)
	}
	p.queued[key.Namespace] = append(p.queued[key.Namespace], j)
	p.metrics.queued.Inc()
	p.cond.Signal()
}

// Hold makes Take report key pending until the given time, so that a pass woken early (by a
// status change) does not start the next attempt before a failed one's backoff ran out. The
// controller still requeues itself for then. A Submit or Cancel ends the hold.
func (p *Pool) Hold(key types.NamespacedName, token string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelLocked(key)
	p.jobs[key] = &job{key: key, token: token, done: true, until: until}
}

// Pending reports whether key has an operation queued, running, or finished and not yet
// taken.
func (p *Pool) Pending(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.jobs[key]
	return ok
}

// Cancel drops key's operation: a queued one never runs, a running one has its context
// cancelled and its outcome is discarded, a finished one is forgotten. A key with none is a
// no-op; controllers call it when their object is gone or finished.
func (p *Pool) Cancel(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelLocked(key)
}

func (p *Pool) cancelLocked(key types.NamespacedName) {
	j, ok := p.jobs[key]
	if !ok {
		return
	}
	delete(p.jobs, key)
	switch {
	case j.cancel != nil:
		j.cancel() // running: the worker discards the outcome
	case !j.done:
		q := p.queued[key.Namespace]
		for i := range q {
			if q[i] == j {
				p.queued[key.Namespace] = append(q[:i:i], q[i+1:]...)
				p.metrics.queued.Dec()
				break
			}
		}
		if len(p.queued[key.Namespace]) == 0 {
			p.dropTurn(key.Namespace)
		}
	}
}

func (p *Pool) dropTurn(ns string) {
	delete(p.queued, ns)
	for i, n := range p.turn {
		if n == ns {
			p.turn = append(p.turn[:i:i], p.turn[i+1:]...)
			return
		}
	}
}

// Start runs the workers until ctx is done (manager.Runnable; it needs leader election, like
// the controllers that feed it). Operations still running are cancelled with ctx.
func (p *Pool) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		p.mu.Lock()
		p.stopped = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work(ctx)
		}()
	}
	wg.Wait()
	return nil
}

func (p *Pool) work(ctx context.Context) {
	for {
		j, jctx := p.next(ctx)
		if j == nil {
			return
		}
		out := run(jctx, j.fn)
		p.finish(j, out)
	}
}

// run calls fn, turning a panic into an error: one bad object must not take the pool down.
func run(ctx context.Context, fn Func) (out Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = Outcome{Err: fmt.Errorf("operation panicked: %v", r)}
		}
	}()
	v, err := fn(ctx)
	return Outcome{Value: v, Err: err}
}

// next waits for a job it may start: the first namespace in turn that is under its cap gives
// its oldest job and goes to the back of the turn.
func (p *Pool) next(ctx context.Context) (*job, context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.stopped {
			return nil, nil
		}
		for i, ns := range p.turn {
			if p.running[ns] >= p.perNamespace {
				continue
			}
			q := p.queued[ns]
			j := q[0]
			p.turn = append(p.turn[:i:i], p.turn[i+1:]...)
			if len(q) > 1 {
				p.queued[ns] = q[1:]
				p.turn = append(p.turn, ns)
			} else {
				delete(p.queued, ns)
			}
			p.running[ns]++
			p.metrics.queued.Dec()
			p.metrics.running.Inc()
			jctx, cancel := context.WithCancel(ctx)
			j.cancel = cancel
			return j, jctx
		}
		p.cond.Wait()
	}
}

// finish records j's outcome (unless j was cancelled or replaced), frees its namespace's slot
// and wakes the controller.
func (p *Pool) finish(j *job, out Outcome) {
	p.mu.Lock()
	j.cancel()
	j.cancel = nil
	p.running[j.key.Namespace]--
	if p.running[j.key.Namespace] == 0 {
		delete(p.running, j.key.Namespace)
	}
	p.metrics.running.Dec()
	current := p.jobs[j.key] == j
	if current {
		j.done, j.out = true, out
	}
	p.cond.Broadcast() // a slot of this namespace is free
	p.mu.Unlock()
	if current {
		obj := p.newObject()
		obj.SetNamespace(j.key.Namespace)
		obj.SetName(j.key.Name)
		p.events <- event.GenericEvent{Object: obj}
	}
}
