package etcdbackupschedule

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackup"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

var (
	k8s   client.Client
	clock = &fakeClock{}
)

// fakeClock is the schedule controller's clock in these tests; they move it, never sleep.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// clockBetweenRuns moves the clock (never backwards) to the wall time and then, when it stands in
// the first half of a period (an hour for "0 * * * *", 10 minutes for "*/10 * * * *"), to the
// middle of it. Earlier tests leave the clock ahead of the wall time, often seconds after a run;
// a schedule created now (its creation is wall time) would make up that run at once. With a
// starting deadline under half the period it skips every run before the clock instead, whatever
// the time of day.
func clockBetweenRuns(period time.Duration) {
	c := clock.Now()
	if now := time.Now(); now.After(c) {
		c = now
	}
	if start := c.Truncate(period); c.Sub(start) < period/2 {
		c = start.Add(period / 2)
	}
	clock.Set(c)
}

// TestMain starts envtest and a manager with the real EtcdBackup controller and the schedule
// controller on the fake clock.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return testutil.RunManagerSuite(m, func(_ context.Context, env *testutil.Env, mgr ctrl.Manager) error {
		k8s = env.Client
		opts := options.New("backup-operator")
		opts.EtcdDialTimeout, opts.EtcdRequestTimeout = 2*time.Second, 2*time.Second
		opts.AllowedEtcdEndpoints = []string{"127.0.0.1"} // the tests' etcd runs on loopback
		// Schedules without a bucket use S3 "bucket" with no Secret: the ambient identity, as an
		// administrator would allow it (they never reach a store in these tests).
		ambient, err := storage.ParseAmbientPolicy([]string{"S3:bucket"})
		if err != nil {
			return err
		}
		opts.Ambient = ambient
		rec := mgr.GetEventRecorderFor(opts.Binary)
		br := &etcdbackup.Reconciler{Client: mgr.GetClient(), Recorder: rec, Options: opts, RetryBackoff: time.Minute, Now: clock.Now}
		sr := &Reconciler{Client: mgr.GetClient(), Recorder: rec, Options: opts, Now: clock.Now}
		clock.Set(time.Now())
		if err := br.SetupWithManager(mgr); err != nil {
			return err
		}
		return sr.SetupWithManager(mgr)
	})
}

func namespace(t *testing.T) string {
	t.Helper()
	return testutil.Namespace(t, k8s, "schedule")
}

// createSchedule creates s and deletes it when the test ends (envtest has no namespace
// controller, so namespaces never go away).
func createSchedule(t *testing.T, s *etcdv1beta2.EtcdBackupSchedule) {
	t.Helper()
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
}

func getSchedule(t *testing.T, ns, name string) *etcdv1beta2.EtcdBackupSchedule {
	t.Helper()
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// poke triggers a pass of the schedule controller after the test moved the clock.
func poke(t *testing.T, ns, name string) {
	t.Helper()
	s := getSchedule(t, ns, name)
	patch := client.MergeFrom(s.DeepCopy())
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["test/poke"] = fmt.Sprint(time.Now().UnixNano())
	if err := k8s.Patch(t.Context(), s, patch); err != nil {
		t.Fatal(err)
	}
}

// advance moves the clock to t (never backwards) and pokes the schedule.
func advance(t *testing.T, ns, name string, to time.Time) {
	t.Helper()
	if to.After(clock.Now()) {
		clock.Set(to)
	}
	poke(t, ns, name)
}

// noBackups is a condition for testutil.Consistently: ns holds no EtcdBackup.
func noBackups(t *testing.T, ns string) func() (bool, string) {
	return func() (bool, string) {
		n := len(backups(t, ns))
		return n == 0, fmt.Sprintf("%d backups", n)
	}
}

func backups(t *testing.T, ns string) []etcdv1beta2.EtcdBackup {
	t.Helper()
	l := &etcdv1beta2.EtcdBackupList{}
	if err := k8s.List(t.Context(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}
