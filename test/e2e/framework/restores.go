//go:build e2e

package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// GetRestore reads EtcdRestore ns/name.
func (f *Framework) GetRestore(ctx context.Context, ns, name string) (*etcdv1beta2.EtcdRestore, error) {
	rs := &etcdv1beta2.EtcdRestore{}
	return rs, f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rs)
}

// WaitRestoreFinished waits until EtcdRestore ns/name succeeded or failed, logging each change of
// its phase and progress message.
func (f *Framework) WaitRestoreFinished(t testing.TB, ns, name string, timeout time.Duration) *etcdv1beta2.EtcdRestore {
	t.Helper()
	var rs *etcdv1beta2.EtcdRestore
	last, start := "", time.Now()
	Eventually(t, timeout, "EtcdRestore "+ns+"/"+name+" finished", func(ctx context.Context) (bool, error) {
		var err error
		if rs, err = f.GetRestore(ctx, ns, name); err != nil {
			return false, err
		}
		msg := ""
		if c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete); c != nil {
			msg = c.Message
		}
		if state := string(rs.Status.Phase) + ": " + msg; state != last {
			t.Logf("%s [%.1fs] %s", name, time.Since(start).Seconds(), state)
			last = state
		}
		return rs.Status.Phase == etcdv1beta2.RestorePhaseSucceeded || rs.Status.Phase == etcdv1beta2.RestorePhaseFailed, fmt.Errorf("phase %s: %s", rs.Status.Phase, msg)
	})
	return rs
}

// WaitRestoreSucceeded is WaitRestoreFinished that fails the test (after dumping the namespace)
// when the restore failed.
func (f *Framework) WaitRestoreSucceeded(t testing.TB, ns, name string, timeout time.Duration) *etcdv1beta2.EtcdRestore {
	t.Helper()
	rs := f.WaitRestoreFinished(t, ns, name, timeout)
	if !rs.Status.Succeeded {
		t.Fatalf("EtcdRestore %s failed: %s", name, rs.Status.Reason)
	}
	return rs
}

// WaitBackupCompleted waits until one-shot EtcdBackup ns/name completed; it fails the test at
// once when the backup failed.
func (f *Framework) WaitBackupCompleted(t testing.TB, ns, name string, timeout time.Duration) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{}
	Eventually(t, timeout, "EtcdBackup "+ns+"/"+name+" completed", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			return false, err
		}
		if b.Status.Phase == etcdv1beta2.BackupPhaseFailed {
			t.Fatalf("EtcdBackup %s/%s failed: %s", ns, name, b.Status.Reason)
		}
		return b.Status.Phase == etcdv1beta2.BackupPhaseCompleted, fmt.Errorf("phase %q", b.Status.Phase)
	})
	return b
}
