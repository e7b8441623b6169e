package etcdcluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// requestDefragmentation writes the annotation that asks for a defragmentation round.
func requestDefragmentation(t *testing.T, ns, value string) {
	t.Helper()
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt] = value
	})
}

// defragmented is the members the fake defragmented, in order.
func defragmented(f *fakeEtcd) []string {
	var out []string
	f.set(func(f *fakeEtcd) { out = slices.Clone(f.defragged) })
	return out
}

// waitRequestHandled waits until value is the handled request and the fake defragmented want.
func waitRequestHandled(t *testing.T, ns string, f *fakeEtcd, value string, want []string) {
	t.Helper()
	testutil.Eventually(t, testutil.Timeout, "the requested round of "+value, testutil.NoError(func() error {
		got, c := defragmented(f), getCluster(t, ns, "c")
		if !slices.Equal(got, want) || c.Status.LastDefragmentRequest != value || c.Status.DefragmentRequest != nil {
			return fmt.Errorf("defragmented %v, lastDefragmentRequest %q, defragmentRequest %+v", got, c.Status.LastDefragmentRequest, c.Status.DefragmentRequest)
		}
		return nil
	}))
}

// TestRequestedDefragmentation: the annotation defragments every member once, followers first
// and the leader (c-0) last, whatever their fragmentation (the fake's members are far under the
// threshold), and records the value as handled; the same value again, over more passes, does
// nothing; a new value runs a new round.
func TestRequestedDefragmentation(t *testing.T) {
	ns, f := grown(t, "defrag-req", 3)
	if got := defragmented(f); len(got) != 0 {
		t.Fatalf("defragmented %v before any request", got)
	}
	round := []string{"c-1", "c-2", "c-0"}
	requestDefragmentation(t, ns, "2026-11-27T10:00:00Z")
	waitRequestHandled(t, ns, f, "2026-11-27T10:00:00Z", round)

	requestDefragmentation(t, ns, "2026-11-27T10:00:00Z")
	anotherPass(t, ns)
	anotherPass(t, ns)
	if got := defragmented(f); !slices.Equal(got, round) {
		t.Fatalf("the handled value again defragmented: %v", got)
	}

	requestDefragmentation(t, ns, "2026-11-27T10:05:00.123456Z")
	waitRequestHandled(t, ns, f, "2026-11-27T10:05:00.123456Z", append(slices.Clone(round), round...))
}

// TestRequestedDefragmentationMalformed: a value that is not an RFC 3339 time is refused with one
// Warning event and a message in status, and nothing is defragmented, however many passes follow.
func TestRequestedDefragmentationMalformed(t *testing.T) {
	ns, f := grown(t, "defrag-bad", 3)
	requestDefragmentation(t, ns, "yesterday at noon")
	testutil.Eventually(t, testutil.Timeout, "the request refused", testutil.NoError(func() error {
		rq := getCluster(t, ns, "c").Status.DefragmentRequest
		if rq == nil || rq.State != etcdv1beta2.DefragmentRequestRefused || rq.RequestedAt != "yesterday at noon" || !strings.Contains(rq.Message, "is not an RFC 3339 time") {
			return fmt.Errorf("defragmentRequest %+v", rq)
		}
		return warningEvents(ns, eventInvalidDefragmentRequest, 1)
	}))
	anotherPass(t, ns)
	anotherPass(t, ns)
	c := getCluster(t, ns, "c")
	if got := defragmented(f); len(got) != 0 || c.Status.LastDefragmentRequest != "" {
		t.Fatalf("defragmented %v, lastDefragmentRequest %q for a malformed request", got, c.Status.LastDefragmentRequest)
	}
	if err := warningEvents(ns, eventInvalidDefragmentRequest, 1); err != nil {
		t.Fatal(err)
	}
}

// TestRequestedDefragmentationHeld: while a member is down the requested round stays pending,
// says what it waits for, and defragments nothing; once the member is back, it runs.
func TestRequestedDefragmentationHeld(t *testing.T) {
	ns, f := grown(t, "defrag-held", 3)
	f.kill("c-1")
	testutil.Eventually(t, testutil.Timeout, "c-1 seen down", testutil.NoError(func() error {
		for _, d := range getCluster(t, ns, "c").Status.Members.Details {
			if d.Name == "c-1" && !d.Healthy {
				return nil
			}
		}
		return fmt.Errorf("c-1 still healthy in status")
	}))
	requestDefragmentation(t, ns, "2026-11-27T11:00:00+01:00")
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "the request pending, waiting for c-1", testutil.NoError(func() error {
		rq := getCluster(t, ns, "c").Status.DefragmentRequest
		if rq == nil || rq.State != etcdv1beta2.DefragmentRequestPending || rq.StartedAt == nil || !strings.Contains(rq.Message, "waits") || !strings.Contains(rq.Message, "c-1") {
			return fmt.Errorf("defragmentRequest %+v", rq)
		}
		return nil
	}))
	anotherPass(t, ns)
	if got, c := defragmented(f), getCluster(t, ns, "c"); len(got) != 0 || c.Status.LastDefragmentRequest != "" {
		t.Fatalf("defragmented %v, lastDefragmentRequest %q while c-1 is down", got, c.Status.LastDefragmentRequest)
	}
	f.set(func(f *fakeEtcd) { delete(f.dead, "c-1") })
	waitRequestHandled(t, ns, f, "2026-11-27T11:00:00+01:00", []string{"c-1", "c-2", "c-0"})
}

// TestDefragmentRequestBookkeeping: the request's record survives a pass that read a status
// older than the last patch (this process's memory), a refused value warns once, and removing
// the annotation withdraws the round.
func TestDefragmentRequestBookkeeping(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 500_000_000, time.UTC)
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now), Recorder: rec}
	c := newCluster("ns", "c", 3)
	c.UID = "u1"
	c.Status.Members.Details = []etcdv1beta2.MemberStatus{{Name: "c-0"}, {Name: "c-1"}, {Name: "c-2"}}
	c.Annotations = map[string]string{etcdv1beta2.AnnotationDefragmentRequestedAt: "2026-11-27T12:00:00Z"}
	stale := c.DeepCopy() // the cluster as a cache that missed the patches below shows it

	r.acceptDefragmentRequest(c)
	rq := c.Status.DefragmentRequest
	if rq == nil || rq.State != etcdv1beta2.DefragmentRequestPending || !rq.StartedAt.Time.Equal(now.Truncate(time.Second)) {
		t.Fatalf("a new value: %+v", rq)
	}
	r.trackDefragmentRequest(c, cluster.MaintenanceAction{Kind: cluster.MaintenanceDefragment, Pod: "c-1"}, nil)
	r.settleDefragmentRequest(c)
	if got := c.Status.DefragmentRequest.Defragmented; !slices.Equal(got, []string{"c-1"}) {
		t.Fatalf("defragmented %v", got)
	}

	r.acceptDefragmentRequest(stale)
	if rq := stale.Status.DefragmentRequest; rq == nil || !slices.Equal(rq.Defragmented, []string{"c-1"}) {
		t.Fatalf("a stale status starts the round over: %+v", rq)
	}
	r.trackDefragmentRequest(stale, cluster.MaintenanceAction{Kind: cluster.MaintenanceRoundDone}, nil)
	r.settleDefragmentRequest(stale)
	if stale.Status.LastDefragmentRequest != "2026-11-27T12:00:00Z" || stale.Status.DefragmentRequest != nil {
		t.Fatalf("round done: last %q, record %+v", stale.Status.LastDefragmentRequest, stale.Status.DefragmentRequest)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Normal DefragmentRequestDone") {
		t.Fatalf("event %q", ev)
	}
	r.acceptDefragmentRequest(c) // still shows the round under way
	if c.Status.LastDefragmentRequest != "2026-11-27T12:00:00Z" || c.Status.DefragmentRequest != nil {
		t.Fatalf("a handled round runs again from a stale status: last %q, record %+v", c.Status.LastDefragmentRequest, c.Status.DefragmentRequest)
	}

	bad := strings.Repeat("not a time ", 10)
	for range 2 {
		c.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt] = bad
		r.acceptDefragmentRequest(c)
		r.settleDefragmentRequest(c)
	}
	if rq := c.Status.DefragmentRequest; rq == nil || rq.State != etcdv1beta2.DefragmentRequestRefused || len(rq.RequestedAt) > maxRequestValue {
		t.Fatalf("a bad value: %+v", rq)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events for one bad value, want 1 Warning", n)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning "+eventInvalidDefragmentRequest) {
		t.Fatalf("event %q", ev)
	}

	delete(c.Annotations, etcdv1beta2.AnnotationDefragmentRequestedAt)
	r.acceptDefragmentRequest(c)
	if c.Status.DefragmentRequest != nil || c.Status.LastDefragmentRequest != "2026-11-27T12:00:00Z" {
		t.Fatalf("annotation removed: last %q, record %+v", c.Status.LastDefragmentRequest, c.Status.DefragmentRequest)
	}
}
