//go:build e2e

package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/backupvolume"
	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestBackupsToAPersistentVolumeClaim is storageType PVC end to end, for clusters with no object
// store: an EtcdBackupSchedule every minute (retention maxBackups 2, history 2) backs a 3-member
// EtcdCluster up to a PersistentVolumeClaim. While the schedule names the claim, the backup
// operator runs a server Pod (mounting the claim), a Service and a Secret, all controlled by the
// claim. Two runs complete, each at a location under PVC://etcd-backups/src/nightly;
// retention reports deleting the older, and the newest EtcdBackup stays, which is exactly what
// kubectl etcd backups lists on the claim (through a port-forward). The schedule's newest backup
// restores into a new cluster and in place, each serving every key written before it with its
// value, and a restore drill of it passes. Once the schedule and the restores are deleted,
// nothing names the claim: the server's three objects go, and the claim stays; a restore of
// the file by its path then starts the server again and succeeds.
func TestBackupsToAPersistentVolumeClaim(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	ns := f.CreateNamespace(t, "backup-pvc")
	const (
		claim    = "etcd-backups"
		path     = "src/nightly"
		schedule = "nightly"
		prefix   = "/pvc/" // of the keys written
		written  = 200
		keep     = 1 // retention maxBackups and successfulBackupsHistoryLimit
	)
	location := fmt.Sprintf("%s://%s/%s", etcdv1beta2.BackupStorageTypePVC, claim, path)

	// A claim of the default StorageClass, and a 3-member cluster holding keys of known values.
	f.Create(t, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
	f.Create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"},
		Spec: etcdv1beta2.ClusterSpec{Size: 3}})
	f.WaitClusterAvailable(t, ns, "src", 3, 4*time.Minute)
	framework.PutDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, "src")), prefix, 0, written)

	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: schedule},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule:                      "*/1 * * * *",
			Retention:                     &etcdv1beta2.RetentionPolicy{MaxBackups: ptr.To[int32](keep)},
			SuccessfulBackupsHistoryLimit: ptr.To[int32](keep),
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "src"},
				StorageType: etcdv1beta2.BackupStorageTypePVC,
				BackupSource: etcdv1beta2.BackupSource{
					PVC: &etcdv1beta2.PVCSource{ClaimName: claim, Path: path},
				},
			}},
		},
	})
	start := time.Now()

	// Two runs, one a minute: the second is one more than retention keeps, so it had to prune.
	// The history limit deletes older EtcdBackups as newer ones complete, so every completed one
	// ever seen is remembered, with its location.
	completed := map[string]string{} // EtcdBackup name -> status.location
	observe := func(ctx context.Context) ([]etcdv1beta2.EtcdBackup, error) {
		children, err := scheduleChildren(ctx, f, ns, schedule)
		for _, b := range children {
			switch b.Status.Phase {
			case etcdv1beta2.BackupPhaseCompleted:
				completed[b.Name] = b.Status.Location
			case etcdv1beta2.BackupPhaseFailed:
				t.Fatalf("scheduled backup %s to the claim failed: %s", b.Name, b.Status.Reason)
			}
		}
		return children, err
	}
	framework.Eventually(t, 4*time.Minute, fmt.Sprintf("%d completed scheduled backups", keep+1), func(ctx context.Context) (bool, error) {
		_, err := observe(ctx)
		return err == nil && len(completed) >= keep+1, fmt.Errorf("completed %v (err %v)", completed, err)
	})
	t.Logf("%d backups in %s: %v", len(completed), time.Since(start).Round(time.Second), completed)

	// The server on the claim: its Pod mounts the claim, its Service selects the Pod, and the
	// claim controls all three (deleting the claim deletes them).
	pvc := &corev1.PersistentVolumeClaim{}
	if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claim}, pvc); err != nil {
		t.Fatal(err)
	}
	pod, svc, secret := serverObjects(ns, claim)
	for _, obj := range []client.Object{pod, svc, secret} {
		if err := f.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("the server's %s %s while the schedule names the claim: %v", kindOf(obj), obj.GetName(), err)
		}
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.Kind != "PersistentVolumeClaim" || ref.UID != pvc.UID {
			t.Errorf("the server's %s %s is controlled by %+v, want the claim %s (uid %s)", kindOf(obj), obj.GetName(), ref, claim, pvc.UID)
		}
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
	}) {
		t.Errorf("the server's Pod %s does not mount the claim %s: volumes %+v", pod.Name, claim, pod.Spec.Volumes)
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("the server's Service %s selects %v, which does not select its Pod (labels %v)", svc.Name, svc.Spec.Selector, pod.Labels)
	}

	// Retention as the API reports it: a RetentionApplied event on the schedule for the claim's
	// path (and no RetentionFailed), and the history keeps the newest EtcdBackup, the one the
	// schedule's status names.
	var kept []string
	framework.Eventually(t, time.Minute, "retention applied to the claim and the history limit", func(ctx context.Context) (bool, error) {
		events, err := scheduleEvents(ctx, f, ns, schedule)
		if err != nil {
			return false, err
		}
		applied := false
		for _, e := range events {
			switch {
			case e.Reason == "RetentionFailed":
				t.Fatalf("retention on the claim failed: %s", e.Message)
			case e.Reason == "RetentionApplied" && strings.Contains(e.Message, location):
				applied = true
			}
		}
		children, err := observe(ctx)
		if err != nil {
			return false, err
		}
		kept = kept[:0]
		for _, b := range children {
			if b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
				kept = append(kept, b.Name)
			}
		}
		all := slices.Sorted(maps.Keys(completed))
		s, err := getSchedule(ctx, f, ns, schedule)
		if err != nil {
			return false, err
		}
		newest := all[len(all)-1]
		return applied && slices.Equal(kept, all[len(all)-keep:]) && s.Status.LastSuccessfulLocation == completed[newest],
			fmt.Errorf("RetentionApplied %t; completed EtcdBackups kept %v of %v; status.lastSuccessfulLocation %q, newest %q",
				applied, kept, all, s.Status.LastSuccessfulLocation, completed[newest])
	})
	t.Logf("kept %v; retention applied under %s", kept, location)

	// What is on the claim, as a user sees it from outside the cluster: kubectl etcd backups
	// reaches the server through a port-forward (TLS still pinned to its certificate) and lists
	// exactly the backups retention kept.
	var out, errOut strings.Builder
	app := kubectletcd.New(strings.NewReader(""), &out, &errOut)
	if rc := app.Run(t.Context(), []string{"--kubeconfig", f.Kubeconfig, "-n", ns, "backups", "src", "--schedule", schedule, "-o", "json"}); rc != 0 {
		t.Fatalf("kubectl etcd backups: exit %d: %s", rc, errOut.String())
	}
	var listed struct {
		Backups []struct {
			Key string `json:"key"`
		} `json:"backups"`
	}
	if err := json.Unmarshal([]byte(out.String()), &listed); err != nil {
		t.Fatalf("kubectl etcd backups -o json: %v: %s", err, out.String())
	}
	var keys []string
	for _, b := range listed.Backups {
		keys = append(keys, fmt.Sprintf("%s://%s/%s", etcdv1beta2.BackupStorageTypePVC, claim, b.Key))
	}
	var want []string
	for _, name := range kept {
		want = append(want, completed[name])
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("kubectl etcd backups lists %v on the claim, want the backups retention kept: %v", keys, want)
	}
	for name, loc := range completed { // every successful backup is a file on the claim
		if !strings.HasPrefix(loc, location) {
			t.Errorf("EtcdBackup %s: status.location %q, want it under %s", name, loc, location)
		}
	}

	// Suspend, and let any run in flight finish: the backup restored next stays the newest, so
	// retention cannot delete it while the restore reads it.
	s, err := getSchedule(t.Context(), f, ns, schedule)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Spec.Suspend = ptr.To(true)
	if err := f.Client.Patch(t.Context(), s, patch); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, "schedule suspended with no backup running", func(ctx context.Context) (bool, error) {
		var err error
		if s, err = getSchedule(ctx, f, ns, schedule); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, etcdv1beta2.ScheduleConditionReady)
		return c != nil && c.Reason == etcdv1beta2.ReasonScheduleSuspended && len(s.Status.Active) == 0,
			fmt.Errorf("Ready %+v, active %v", c, s.Status.Active)
	})

	// The schedule's newest backup, restored from the claim into a new cluster, serves every key
	// written before it with its value.
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "restored"},
			ClusterTemplate:   &etcdv1beta2.EtcdClusterRef{Name: "src"},
			BackupScheduleRef: &etcdv1beta2.LocalObjectReference{Name: schedule},
		},
	})
	rs := f.WaitRestoreSucceeded(t, ns, "restored", 5*time.Minute)
	if rs.Status.BackupLocation != s.Status.LastSuccessfulLocation {
		t.Errorf("restored %s, want the schedule's newest backup %s", rs.Status.BackupLocation, s.Status.LastSuccessfulLocation)
	}
	cli := f.EtcdClient(t, framework.ClientEndpoint(ns, "restored"))
	if n, diffs := framework.CheckDataset(t, cli, prefix, written); len(diffs) > 0 {
		t.Fatalf("restored cluster holds %d keys under %s, differences from the %d written: %v", n, prefix, written, diffs)
	}
	t.Logf("restored %s in %s: all %d keys with their values", rs.Status.BackupLocation, rs.Status.Duration.Duration, written)

	// A restore drill of the schedule's newest backup (kubectl etcd drill now: the drill
	// EtcdRestore the schedule would make, into a scratch cluster), followed to "passed".
	out.Reset()
	errOut.Reset()
	if rc := app.Run(t.Context(), []string{"--kubeconfig", f.Kubeconfig, "-n", ns, "drill", "now", "src", "--schedule", schedule, "--timeout", "5m"}); rc != 0 {
		t.Fatalf("kubectl etcd drill now: exit %d: %s%s", rc, out.String(), errOut.String())
	}
	t.Logf("drill: %s", strings.TrimSpace(out.String()))

	// In place: src itself replaced by its newest backup from the claim (the restore operator's
	// check Job reads the claim through the server before anything is deleted), every key back.
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-place"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "src"},
			BackupScheduleRef: &etcdv1beta2.LocalObjectReference{Name: schedule},
		},
	})
	inPlace := f.WaitRestoreSucceeded(t, ns, "in-place", 5*time.Minute)
	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "src"))
	if n, diffs := framework.CheckDataset(t, cli, prefix, written); len(diffs) > 0 {
		t.Fatalf("src restored in place holds %d keys under %s, differences from the %d written: %v", n, prefix, written, diffs)
	}
	t.Logf("restored src in place from %s in %s: all %d keys with their values", inPlace.Status.BackupLocation, inPlace.Status.Duration.Duration, written)

	// Nothing names the claim any more (the restored cluster's spec.bootstrap.restore.source still
	// does, but it finished restoring): the server's Pod, Service and Secret go, releasing the
	// ReadWriteOnce claim, and the claim with the backups on it stays.
	for _, obj := range []client.Object{rs, inPlace, s} {
		if err := f.Client.Delete(t.Context(), obj); err != nil {
			t.Fatalf("deleting %s %s: %v", kindOf(obj), obj.GetName(), err)
		}
	}
	framework.Eventually(t, 2*time.Minute, "the server's Pod, Service and Secret deleted", func(ctx context.Context) (bool, error) {
		var left []string
		for _, obj := range []client.Object{pod, svc, secret} {
			err := f.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			switch {
			case err == nil:
				left = append(left, kindOf(obj))
			case !apierrors.IsNotFound(err):
				return false, err
			}
		}
		return len(left) == 0, fmt.Errorf("still there: %v", left)
	})
	now := &corev1.PersistentVolumeClaim{}
	if err := f.Client.Get(t.Context(), client.ObjectKeyFromObject(pvc), now); err != nil {
		t.Fatalf("the claim after its server went: %v", err)
	}
	if now.UID != pvc.UID || now.DeletionTimestamp != nil || now.Status.Phase != corev1.ClaimBound {
		t.Fatalf("the claim after its server went: uid %s (was %s), deletionTimestamp %v, phase %s; want the same claim, Bound, not being deleted",
			now.UID, pvc.UID, now.DeletionTimestamp, now.Status.Phase)
	}

	// A restore from the claim when nothing else names it (the coreos form, the exact file): the
	// backup operator starts the server again for it, and the restore waits for the server
	// instead of failing its first read; the files were kept.
	newest := s.Status.LastSuccessfulLocation
	key := strings.TrimPrefix(newest, fmt.Sprintf("%s://%s/", etcdv1beta2.BackupStorageTypePVC, claim))
	f.Create(t, &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again"},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: "again"},
			ClusterTemplate:   &etcdv1beta2.EtcdClusterRef{Name: "src"},
			BackupStorageType: etcdv1beta2.BackupStorageTypePVC,
			BackupSource:      etcdv1beta2.BackupSource{PVC: &etcdv1beta2.PVCSource{ClaimName: claim, Path: key}},
		},
	})
	again := f.WaitRestoreSucceeded(t, ns, "again", 5*time.Minute)
	cli = f.EtcdClient(t, framework.ClientEndpoint(ns, "again"))
	if n, diffs := framework.CheckDataset(t, cli, prefix, written); len(diffs) > 0 {
		t.Fatalf("the cluster restored from the claim alone holds %d keys under %s, differences from the %d written: %v", n, prefix, written, diffs)
	}
	t.Logf("restored %s with no other user of the claim in %s (the server started for it): all %d keys", again.Status.BackupLocation, again.Status.Duration.Duration, written)
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

// serverObjects are the Pod, Service and Secret of the server on claim in ns, by name only.
func serverObjects(ns, claim string) (*corev1.Pod, *corev1.Service, *corev1.Secret) {
	om := metav1.ObjectMeta{Namespace: ns, Name: backupvolume.Name(claim)}
	return &corev1.Pod{ObjectMeta: om}, &corev1.Service{ObjectMeta: om}, &corev1.Secret{ObjectMeta: om}
}

// kindOf is the kind of a typed object, for messages ("Pod", "EtcdRestore").
func kindOf(obj client.Object) string {
	name := fmt.Sprintf("%T", obj)
	return name[strings.LastIndex(name, ".")+1:]
}

// getSchedule reads EtcdBackupSchedule ns/name.
func getSchedule(ctx context.Context, f *framework.Framework, ns, name string) (*etcdv1beta2.EtcdBackupSchedule, error) {
	s := &etcdv1beta2.EtcdBackupSchedule{}
	return s, f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
}

// scheduleEvents are the events on EtcdBackupSchedule ns/name.
func scheduleEvents(ctx context.Context, f *framework.Framework, ns, name string) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	if err := f.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "EtcdBackupSchedule" && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out, nil
}
