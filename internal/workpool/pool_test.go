package workpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newPool(t *testing.T, workers, perNamespace int) *Pool {
	t.Helper()
	p := New(t.Name(), workers, perNamespace, func() client.Object { return &corev1.ConfigMap{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// await waits for the pool's event about k and returns k's outcome.
func await(t *testing.T, p *Pool, k types.NamespacedName) *Outcome {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-p.Events():
			if ev.Object.GetNamespace() != k.Namespace || ev.Object.GetName() != k.Name {
				continue
			}
			out, _ := p.Take(k, "t")
			if out == nil {
				t.Fatalf("%s: an event but no outcome", k)
			}
			return out
		case <-timeout:
			t.Fatalf("%s: no outcome within 10s", k)
		}
	}
}

// tarpit is an operation that holds its worker until its context is cancelled, like a backup
// to a store that accepts the connection and never answers.
func tarpit(started chan<- string, name string) Func {
	return func(ctx context.Context) (any, error) {
		started <- name
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// A tenant with more stalled operations than there are workers holds only its share: another
// namespace's backup runs and finishes while every one of the tenant's still hangs.
func TestStalledTenantHoldsOnlyItsShare(t *testing.T) {
	p := newPool(t, 4, 2)
	started := make(chan string, 16)
	for i := range 10 {
		p.Submit(key("tenant-a", fmt.Sprint("b", i)), "t", tarpit(started, fmt.Sprint("a", i)))
	}
	// Two of tenant-a's start, then no more: the cap per namespace.
	for range 2 {
		<-started
	}
	p.Submit(key("tenant-b", "nightly"), "t", func(context.Context) (any, error) { return "stored", nil })
	if got := await(t, p, key("tenant-b", "nightly")); got.Err != nil || got.Value != "stored" {
		t.Fatalf("tenant-b's backup: %+v", got)
	}
	select {
	case s := <-started:
		t.Fatalf("a third operation of tenant-a started (%s) while two hang", s)
	default:
	}
	for i := range 10 {
		if !p.Pending(key("tenant-a", fmt.Sprint("b", i))) {
			t.Fatalf("tenant-a's b%d is not pending", i)
		}
	}
}

// Namespaces take turns: with one worker, a namespace that queued many operations first does
// not go before the others' first ones.
func TestNamespacesTakeTurns(t *testing.T) {
	p := newPool(t, 1, 1)
	gate := make(chan struct{})
	var mu sync.Mutex
	var order []string
	op := func(name string) Func {
		return func(context.Context) (any, error) {
			if name == "a0" {
				<-gate
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return nil, nil
		}
	}
	p.Submit(key("a", "0"), "t", op("a0"))
	for _, k := range []struct{ ns, name string }{{"a", "1"}, {"a", "2"}, {"b", "0"}, {"c", "0"}, {"b", "1"}} {
		p.Submit(key(k.ns, k.name), "t", op(k.ns+k.name))
	}
	close(gate)
	for _, k := range []types.NamespacedName{key("a", "0"), key("b", "0"), key("c", "0"), key("a", "1"), key("b", "1"), key("a", "2")} {
		await(t, p, k)
	}
	want := []string{"a0", "b0", "c0", "a1", "b1", "a2"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// An outcome is handed over once; the next Do starts a new operation.
func TestOutcomeHandedOverOnce(t *testing.T) {
	p := newPool(t, 1, 1)
	runs := 0
	op := func(context.Context) (any, error) { runs++; return runs, nil }
	k := key("ns", "b")
	p.Submit(k, "t", op)
	if out := await(t, p, k); out.Value != 1 {
		t.Fatalf("first outcome %+v", out)
	}
	if p.Pending(k) {
		t.Fatal("a handed-over outcome is still held")
	}
	p.Submit(k, "t", op)
	if out := await(t, p, k); out.Value != 2 {
		t.Fatalf("second outcome %+v", out)
	}
}

// Cancel stops a running operation and discards what it returns; a new token (the object was
// made again under the same name) replaces the old operation; a queued one never runs.
func TestCancelAndReplace(t *testing.T) {
	p := newPool(t, 1, 1)
	started := make(chan string, 4)
	k := key("ns", "b")
	p.Submit(k, "uid-1", tarpit(started, "old"))
	<-started
	ran := false
	p.Submit(key("ns", "queued"), "t", func(context.Context) (any, error) { ran = true; return nil, nil })
	p.Cancel(key("ns", "queued"))
	// The same name with another UID: the old operation is cancelled, the new one runs.
	if _, pending := p.Take(k, "uid-2"); pending || p.Pending(k) {
		t.Fatal("the operation of the old object is still pending for the new one")
	}
	p.Submit(k, "uid-2", func(context.Context) (any, error) { return "new", nil })
	timeout := time.After(10 * time.Second)
	for {
		select {
		case <-p.Events():
			out, pending := p.Take(k, "uid-2")
			if pending {
				continue
			}
			if out.Value != "new" {
				t.Fatalf("outcome %+v, want the new operation's", out)
			}
			if ran {
				t.Fatal("a cancelled queued operation ran")
			}
			return
		case <-timeout:
			t.Fatal("no outcome from the replacing operation")
		}
	}
}

// A panicking operation is an error outcome, and the worker goes on.
func TestPanicIsAnError(t *testing.T) {
	p := newPool(t, 1, 1)
	k := key("ns", "b")
	p.Submit(k, "t", func(context.Context) (any, error) { panic("boom") })
	if out := await(t, p, k); out.Err == nil {
		t.Fatal("no error from a panicking operation")
	}
	p.Submit(k, "t", func(context.Context) (any, error) { return nil, errors.New("second") })
	if out := await(t, p, k); out.Err == nil || out.Err.Error() != "second" {
		t.Fatalf("the worker did not go on: %+v", out)
	}
}

// A hold keeps key pending until its time, then lets the next operation be submitted.
func TestHold(t *testing.T) {
	p := newPool(t, 1, 1)
	k := key("ns", "r")
	p.Hold(k, "t", time.Now().Add(time.Hour))
	if out, pending := p.Take(k, "t"); out != nil || !pending {
		t.Fatalf("held key: outcome %v pending %v, want pending", out, pending)
	}
	p.Hold(k, "t", time.Now().Add(-time.Second))
	if out, pending := p.Take(k, "t"); out != nil || pending || p.Pending(k) {
		t.Fatalf("hold ran out: outcome %v pending %v, want nothing", out, pending)
	}
}
