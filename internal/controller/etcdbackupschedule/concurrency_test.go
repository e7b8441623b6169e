package etcdbackupschedule

import (
	"fmt"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// blackhole accepts TCP connections and never answers, so a backup against it stays active
// through its first attempt and the retry backoff (a minute in this suite).
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return "http://" + l.Addr().String()
}

func exists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &etcdv1beta2.EtcdBackup{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestConcurrencyPolicy: with a backup still running, Forbid skips a due run, and Replace
// deletes the running backup and starts the new run.
func TestConcurrencyPolicy(t *testing.T) {
	ns := namespace(t)
	clockBetweenRuns(10 * time.Minute)
	s := newSchedule(ns, "slow", "*/10 * * * *", []string{blackhole(t)}, nil, "")
	s.Spec.StartingDeadlineSeconds = ptr.To[int64](60) // no run made up: see clockBetweenRuns
	createSchedule(t, s)
	testutil.Eventually(t, 10*time.Second, "nextScheduleTime", func() (bool, string) {
		s = getSchedule(t, ns, "slow")
		return s.Status.NextScheduleTime != nil, readyReason(s)
	})
	run1 := s.Status.NextScheduleTime.Time
	advance(t, ns, "slow", run1.Add(time.Second))
	testutil.Eventually(t, 20*time.Second, "the first run to be active", func() (bool, string) {
		s = getSchedule(t, ns, "slow")
		return len(s.Status.Active) == 1 && s.Status.Active[0] == BackupName("slow", run1), fmt.Sprintf("active %v", s.Status.Active)
	})

	// Forbid (the default): the next run is skipped while the first is active.
	run2 := run1.Add(10 * time.Minute)
	advance(t, ns, "slow", run2.Add(time.Second))
	testutil.Eventually(t, 20*time.Second, "the schedule to look at run 2", func() (bool, string) {
		s = getSchedule(t, ns, "slow")
		return s.Status.NextScheduleTime.After(run2), s.Status.NextScheduleTime.String()
	})
	if exists(t, ns, BackupName("slow", run2)) {
		t.Fatal("Forbid started a run while a backup was active")
	}
	if !exists(t, ns, BackupName("slow", run1)) {
		t.Fatal("the active backup disappeared")
	}

	// Replace: the active backup is deleted and the due run starts.
	updateSchedule(t, ns, "slow", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.ConcurrencyPolicy = etcdv1beta2.ReplaceConcurrent })
	testutil.Eventually(t, 20*time.Second, "Replace to swap the backups", func() (bool, string) {
		s = getSchedule(t, ns, "slow")
		return exists(t, ns, BackupName("slow", run2)) && !exists(t, ns, BackupName("slow", run1)), fmt.Sprintf("run1 %t run2 %t status %+v", exists(t, ns, BackupName("slow", run1)), exists(t, ns, BackupName("slow", run2)), s.Status)
	})
}
