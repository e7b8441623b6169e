//go:build e2e

package framework

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// CorruptMember corrupts the data of member pod of cluster name on disk, as a failing disk
// would: 64 KiB of random bytes written over the start of its bbolt db (its meta pages and
// first tree pages), so the pod comes back on a volume etcd refuses (damageMember).
func (f *Framework) CorruptMember(t testing.TB, ns, name, pod string) {
	t.Helper()
	f.damageMember(t, ns, name, pod, func(db string) {
		garbage := make([]byte, 64<<10)
		_, _ = rand.Read(garbage)
		fh, err := os.OpenFile(db, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(garbage, 0); err != nil {
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("fault: %d bytes of garbage written over %s (member %s/%s)", len(garbage), db, ns, pod)
	})
}

// AlterMember changes the newest value member pod of cluster name has committed to its bbolt
// db and leaves the file valid (snapshottest.AlterNewestValue): the pod comes back and serves,
// but its data differs from its peers', which only etcd's corruption checks find.
func (f *Framework) AlterMember(t testing.TB, ns, name, pod string) {
	t.Helper()
	f.commitMember(t, ns, name, pod)
	f.damageMember(t, ns, name, pod, func(db string) {
		snapshottest.AlterNewestValue(t, db)
		t.Logf("fault: the newest value in %s altered (member %s/%s)", db, ns, pod)
	})
}

// commitMember makes member pod of cluster name write a key revision to its bbolt db before it
// is damaged. etcd writes what it applied to the file every 100 ms (its backend batch interval)
// and keeps the rest in its WAL only, so a member killed with grace 0 right after a cluster's
// first writes can hold no key revision in the file (a CI rehearsal at 02889bd, on a machine
// 97 % busy: "no key revision committed to the file yet"). A key put through the member, a
// linearizable read there (the member applied it), and a defragmentation of the member (it
// commits what the member applied before it rewrites the file) leave one in the file.
func (f *Framework) commitMember(t testing.TB, ns, name, pod string) {
	t.Helper()
	url := fmt.Sprintf("http://%s.%s:2379", pod, ServiceDNSName(name, ns))
	cli := f.EtcdClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const key = "/e2e-framework/committed"
	if _, err := cli.Put(ctx, key, pod); err != nil {
		t.Fatalf("put through %s: %v", pod, err)
	}
	if _, err := cli.Get(ctx, key); err != nil {
		t.Fatalf("linearizable read on %s: %v", pod, err)
	}
	if _, err := cli.Defragment(ctx, url); err != nil {
		t.Fatalf("defragmenting %s: %v", pod, err)
	}
}

// damageMember applies damage to the bbolt db of member pod of cluster name with the cluster
// paused (the operator leaves the pod down): the pod is force-deleted, damaged, and the
// cluster resumed. The volume must be a host path on this machine (the local cluster's default
// class); the test is skipped otherwise.
func (f *Framework) damageMember(t testing.TB, ns, name, pod string, damage func(db string)) {
	t.Helper()
	db := f.memberDB(t, ns, pod)
	f.SetPaused(t, ns, name, true)
	if err := f.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	Eventually(t, time.Minute, "pod "+pod+" gone", func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &corev1.Pod{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Errorf("pod %s: %v", pod, err)
	})
	damage(db)
	f.SetPaused(t, ns, name, false)
}

// memberDB is the path, on this machine, of the bbolt db on member pod's volume.
func (f *Framework) memberDB(t testing.TB, ns, pod string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := f.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod}, pvc); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := f.Client.Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil {
		t.Skipf("volume %s is not a host path: corrupting a member's data needs the local cluster", pv.Name)
	}
	matches, _ := filepath.Glob(filepath.Join(pv.Spec.HostPath.Path, "*", "member", "snap", "db"))
	if len(matches) != 1 {
		t.Skipf("no etcd db under %s on this machine (%v): corrupting a member's data needs the local cluster", pv.Spec.HostPath.Path, matches)
	}
	return matches[0]
}

// SetPaused sets spec.paused of cluster name.
func (f *Framework) SetPaused(t testing.TB, ns, name string, paused bool) {
	t.Helper()
	Eventually(t, time.Minute, fmt.Sprintf("spec.paused %t", paused), func(ctx context.Context) (bool, error) {
		c, err := f.GetCluster(ctx, ns, name)
		if err != nil {
			return false, err
		}
		c.Spec.Paused = paused
		err = f.Client.Update(ctx, c)
		return err == nil, err
	})
}

// LoseVolumes loses members pods of cluster name with their data, as nodes that die with their
// local volumes do: with the cluster paused (the operator leaves them down), their pods are
// force-deleted and their volume claims deleted, and once the claims are gone the cluster is
// resumed.
func (f *Framework) LoseVolumes(t testing.TB, ns, name string, pods ...string) {
	t.Helper()
	f.SetPaused(t, ns, name, true)
	for _, pod := range pods {
		if err := f.Client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err := f.Client.Delete(context.Background(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range pods {
		Eventually(t, 2*time.Minute, "pod and volume "+pod+" gone", func(ctx context.Context) (bool, error) {
			errPod := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &corev1.Pod{})
			errPVC := f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(errPod) && apierrors.IsNotFound(errPVC), fmt.Errorf("pod: %v, volume: %v", errPod, errPVC)
		})
	}
	t.Logf("fault: members %v of %s/%s lost with their volumes", pods, ns, name)
	f.SetPaused(t, ns, name, false)
}
