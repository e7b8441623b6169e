package kubectletcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// syncBuffer is an output stream a test reads while the plugin writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDefrag runs `defrag` with args in ns in the background (startCommand).
func startDefrag(ctx context.Context, now time.Time, ns string, args ...string) (*syncBuffer, *syncBuffer, <-chan int) {
	return startCommand(ctx, now, ns, "defrag", args...)
}

// startCommand runs the plugin's command cmd with args in ns in the background, on streams the
// test can read while it runs, polling every 20 ms; the channel gives the exit code.
func startCommand(ctx context.Context, now time.Time, ns, cmd string, args ...string) (*syncBuffer, *syncBuffer, <-chan int) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	a := New(strings.NewReader(""), out, errOut)
	a.Now = func() time.Time { return now }
	a.Interval = 20 * time.Millisecond
	code := make(chan int, 1)
	go func() {
		code <- a.Run(ctx, append(append([]string{cmd}, args...), "--kubeconfig", kubeconfig, "-n", ns))
	}()
	return out, errOut, code
}

// operatorStep writes the status the etcd operator would (change applied to the current one)
// and, when want is set, waits until the plugin printed it.
func operatorStep(t *testing.T, key client.ObjectKey, out *syncBuffer, want string, change func(st *etcdv1beta2.ClusterStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		c := &etcdv1beta2.EtcdCluster{}
		if err := k8s.Get(t.Context(), key, c); err != nil {
			return err
		}
		change(&c.Status)
		return k8s.Status().Update(t.Context(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want != "" {
		testutil.Eventually(t, testutil.Timeout, "the plugin prints "+want, testutil.NoError(func() error {
			if !strings.Contains(out.String(), want) {
				return fmt.Errorf("output so far:\n%s", out.String())
			}
			return nil
		}))
	}
}

// waitAnnotation waits until the cluster carries the request annotation and returns its value.
func waitAnnotation(t *testing.T, key client.ObjectKey) string {
	t.Helper()
	var v string
	testutil.Eventually(t, testutil.Timeout, "the request annotation", testutil.NoError(func() error {
		c := &etcdv1beta2.EtcdCluster{}
		if err := k8s.Get(t.Context(), key, c); err != nil {
			return err
		}
		if v = c.Annotations[etcdv1beta2.AnnotationDefragmentRequestedAt]; v == "" {
			return fmt.Errorf("annotations %v", c.Annotations)
		}
		return nil
	}))
	return v
}

// TestDefrag: `defrag` writes the request annotation (the current time, RFC 3339; other
// annotations kept) and follows status as the etcd operator writes it: accepted, what the round
// waits for, each member defragmented in order, and done once status.lastDefragmentRequest is
// the value (exit 0); then the members with their part in the round.
func TestDefrag(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "defrag")
	now := time.Date(2026, 11, 27, 5, 0, 0, 250_000_000, time.UTC)
	const mib = 1 << 20
	members := []etcdv1beta2.MemberStatus{
		{Name: "main-0", ID: "a", Role: etcdv1beta2.MemberRoleLeader, DBSize: 100 * mib, DBSizeInUse: 40 * mib, Healthy: true},
		{Name: "main-1", ID: "b", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 90 * mib, Healthy: true},
		{Name: "main-2", ID: "c", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 10 * mib, Healthy: true},
	}
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{LastDefragmentRequest: "2026-11-20T00:00:00Z", Members: etcdv1beta2.MembersStatus{Details: members}})
	key := client.ObjectKey{Namespace: ns, Name: "main"}
	c := &etcdv1beta2.EtcdCluster{}
	if err := k8s.Get(t.Context(), key, c); err != nil {
		t.Fatal(err)
	}
	c.Annotations = map[string]string{"team": "db"}
	if err := k8s.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := startDefrag(t.Context(), now, ns, "main")
	value := waitAnnotation(t, key)
	if value != "2026-11-27T05:00:00.25Z" {
		t.Fatalf("annotation %q, want the current time in RFC 3339", value)
	}
	started := &metav1.Time{Time: now.Truncate(time.Second)}
	operatorStep(t, key, out, "waits for a pass in which every member is healthy: Degraded (MemberUnhealthy): main-1", func(st *etcdv1beta2.ClusterStatus) {
		st.DefragmentRequest = &etcdv1beta2.DefragmentRequestStatus{RequestedAt: value, State: etcdv1beta2.DefragmentRequestPending, StartedAt: started,
			Message: "the requested round waits for a pass in which every member is healthy: Degraded (MemberUnhealthy): main-1"}
	})
	for i, name := range []string{"main-1", "main-2", "main-0"} {
		operatorStep(t, key, out, fmt.Sprintf("defragmented %s (%d of 3 members)", name, i+1), func(st *etcdv1beta2.ClusterStatus) {
			st.DefragmentRequest.Defragmented = append(st.DefragmentRequest.Defragmented, name)
			st.DefragmentRequest.Message = "defragmented member " + name
		})
	}
	operatorStep(t, key, out, "", func(st *etcdv1beta2.ClusterStatus) {
		st.LastDefragmentRequest, st.DefragmentRequest = value, nil
		for i := range st.Members.Details {
			st.Members.Details[i].LastDefragmentationTime = &metav1.Time{Time: now.Add(-time.Minute)}
		}
	})
	select {
	case rc := <-code:
		t.Log("\n" + out.String() + errOut.String())
		if rc != 0 {
			t.Fatalf("exit %d, want 0; stderr %q", rc, errOut.String())
		}
	case <-time.After(testutil.Timeout):
		t.Fatalf("defrag did not return once the request was handled:\n%s", out.String())
	}
	mustContain(t, out.String(), "defragmentation requested: etcd.database.coreos.com/defragment-requested-at=2026-11-27T05:00:00.25Z on etcdcluster "+ns+"/main",
		"accepted by the etcd operator at 2026-11-27T05:00:00Z",
		"defragmented main-1 (1 of 3 members)\ndefragmented main-2 (2 of 3 members)\ndefragmented main-0 (3 of 3 members)\ndone: every member was defragmented",
		"Request 2026-11-27T05:00:00.25Z: handled",
		"main-0 Leader 100.0 MiB 40.0 MiB 60% 60s ago yes no: 60.0 MiB free < minFreeBytes 64.0 MiB")
	after := &etcdv1beta2.EtcdCluster{}
	if err := k8s.Get(t.Context(), key, after); err != nil {
		t.Fatal(err)
	}
	if after.Annotations["team"] != "db" || after.Generation != c.Generation {
		t.Errorf("the request changed more than its annotation: annotations %v, generation %d -> %d", after.Annotations, c.Generation, after.Generation)
	}
}

// TestDefragNoWait: --wait=false writes the request and returns at once (exit 0) with what the
// operator's status says so far and its standing policy; -o json prints the same as an object.
// A later run writes a new value.
func TestDefragNoWait(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "defrag-nowait")
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	const mib = 1 << 20
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{
		LastDefragmentationRound: &metav1.Time{Time: time.Date(2026, 11, 22, 3, 0, 5, 0, time.UTC)},
		Members: etcdv1beta2.MembersStatus{Details: []etcdv1beta2.MemberStatus{
			{Name: "main-0", ID: "a", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 40 * mib, Healthy: true},
			{Name: "main-1", ID: "b", Role: etcdv1beta2.MemberRoleLeader, DBSize: 100 * mib, DBSizeInUse: 90 * mib, Healthy: true},
			{Name: "main-2", ID: "c", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100 * mib, DBSizeInUse: 10 * mib, Healthy: true, LastDefragmentationTime: ago(now, 3*time.Minute)},
		}},
	})
	c := &etcdv1beta2.EtcdCluster{}
	key := client.ObjectKey{Namespace: ns, Name: "main"}
	if err := k8s.Get(t.Context(), key, c); err != nil {
		t.Fatal(err)
	}
	minFree := resource.MustParse("1Mi")
	c.Spec.Maintenance = &etcdv1beta2.MaintenanceSpec{Defragmentation: &etcdv1beta2.DefragmentationSpec{Schedule: "0 3 * * 0", FragmentedPercent: ptr.To[int32](40), MinFreeBytes: &minFree}}
	if err := k8s.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}

	r := run(t.Context(), now, ns, "defrag", "main", "--wait=false")
	t.Log("\n" + r.out + r.err)
	if r.code != 0 {
		t.Errorf("exit %d, want 0; stderr %q", r.code, r.err)
	}
	if v := waitAnnotation(t, key); v != "2026-11-27T05:00:00Z" {
		t.Errorf("annotation %q", v)
	}
	mustContain(t, r.out, "defragmentation requested: etcd.database.coreos.com/defragment-requested-at=2026-11-27T05:00:00Z",
		"Request 2026-11-27T05:00:00Z: not accepted by the etcd operator yet.",
		"Threshold: 40% of the file free and at least 1.0 MiB, at most once per member every 10m",
		`Rounds: "0 3 * * 0" (UTC); last round 2026-11-22T03:00:05Z, next 2026-11-29T03:00:00Z`,
		"main-0 Follower 100.0 MiB 40.0 MiB 60% never no yes: 60% free >= 40%",
		"main-1 Leader 100.0 MiB 90.0 MiB 10% never no no: 10% free < 40%",
		"main-2 Follower 100.0 MiB 10.0 MiB 90% 3m ago no no: threshold met; not before 2026-11-27T05:07:00Z (once per 10m)")

	later := now.Add(time.Hour)
	r = run(t.Context(), later, ns, "defrag", "main", "--wait=false", "-o", "json")
	var rep defragReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("-o json does not parse: %v\n%s", err, r.out)
	}
	if r.code != 0 || !rep.Requested || rep.RequestedAt != "2026-11-27T06:00:00Z" || rep.Handled || len(rep.Members) != 3 || !rep.Members[0].Due || rep.FragmentedPercent != 40 {
		t.Errorf("-o json: exit %d, %+v", r.code, rep)
	}
	if !strings.Contains(r.err, "defragmentation requested") {
		t.Errorf("with -o the progress goes to stderr: %q", r.err)
	}
	if v := waitAnnotation(t, key); v != "2026-11-27T06:00:00Z" {
		t.Errorf("annotation %q after the second request", v)
	}
}

// TestDefragRefusedOrTimedOut: a value the operator refused ends `defrag` with exit 1 and the
// operator's message; with no operator answering, --timeout ends it with exit 1 and says the
// request stays.
func TestDefragRefusedOrTimedOut(t *testing.T) {
	ns := testutil.Namespace(t, k8s, "defrag-refused")
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	newCluster(t, ns, "main", etcdv1beta2.ClusterStatus{})
	key := client.ObjectKey{Namespace: ns, Name: "main"}

	out, errOut, code := startDefrag(t.Context(), now, ns, "main")
	value := waitAnnotation(t, key)
	operatorStep(t, key, out, "", func(st *etcdv1beta2.ClusterStatus) {
		st.DefragmentRequest = &etcdv1beta2.DefragmentRequestStatus{RequestedAt: value, State: etcdv1beta2.DefragmentRequestRefused, Message: "not an RFC 3339 time"}
	})
	select {
	case rc := <-code:
		if rc != 1 || !strings.Contains(out.String(), "REFUSED: not an RFC 3339 time") {
			t.Errorf("refused: exit %d, want 1\n%s%s", rc, out.String(), errOut.String())
		}
	case <-time.After(testutil.Timeout):
		t.Fatalf("defrag did not return once the request was refused:\n%s", out.String())
	}

	r := run(t.Context(), now.Add(time.Minute), ns, "defrag", "main", "--timeout", "300ms")
	if r.code != 1 || !strings.Contains(r.err, "the etcd operator has not accepted it") || !strings.Contains(r.err, "the request stays") {
		t.Errorf("timed out: exit %d, want 1\n%s%s", r.code, r.out, r.err)
	}
}

// TestDefragScheduledRound: once a scheduled round is due, every member not defragmented since
// it became due is due whatever its fragmentation, and an unhealthy member is named as what
// blocks the operator's upkeep.
func TestDefragScheduledRound(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 5, 0, 0, time.UTC)
	c := &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "main", CreationTimestamp: metav1.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}},
		Spec:       etcdv1beta2.ClusterSpec{Maintenance: &etcdv1beta2.MaintenanceSpec{Defragmentation: &etcdv1beta2.DefragmentationSpec{Schedule: "0 3 * * 0"}}},
		Status: etcdv1beta2.ClusterStatus{
			LastDefragmentationRound: &metav1.Time{Time: time.Date(2026, 11, 22, 3, 1, 0, 0, time.UTC)},
			Members: etcdv1beta2.MembersStatus{Details: []etcdv1beta2.MemberStatus{
				{Name: "main-0", Role: etcdv1beta2.MemberRoleFollower, DBSize: 100, DBSizeInUse: 100, Healthy: true, LastDefragmentationTime: ago(now, 2*time.Minute)},
				{Name: "main-1", Role: etcdv1beta2.MemberRoleLeader, DBSize: 100, DBSizeInUse: 100, Healthy: true},
				{Name: "main-2", Role: etcdv1beta2.MemberRoleUnknown},
			}},
		},
	}
	rep := planDefrag(c, now)
	if rep.Members[0].Due || !rep.Members[1].Due || rep.Members[1].Why != "the scheduled round of 2026-11-29T03:00:00Z" {
		t.Errorf("members %+v: want main-0 done in the round, main-1 due for it", rep.Members)
	}
	if rep.Blocked == "" || rep.NextRound == nil || !rep.NextRound.Equal(&metav1.Time{Time: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}) {
		t.Errorf("blocked %q, next round %v", rep.Blocked, rep.NextRound)
	}
}
