//go:build e2e

package backup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/controller/etcdbackupschedule"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// singleMember starts a one-member etcd pod db-0 in ns and returns its client URL.
func singleMember(t testing.TB, f *framework.Framework, ns string) string {
	t.Helper()
	labels := map[string]string{"app": "backup-e2e"}
	member := fmt.Sprintf("http://%s:2379", framework.PodDNSName("db-0", "db", ns))
	f.Create(t, framework.HeadlessService(ns, "db", labels, 2379))
	f.Create(t, framework.SingleEtcdPod(ns, "db-0", "db", labels, member))
	f.WaitForPodReady(t, ns, "db-0", 2*time.Minute)
	return member
}

// scheduleChildren lists the EtcdBackups a schedule created, oldest first (their names end in
// the run's UTC minute).
func scheduleChildren(ctx context.Context, f *framework.Framework, ns, schedule string) ([]etcdv1beta2.EtcdBackup, error) {
	list := &etcdv1beta2.EtcdBackupList{}
	if err := f.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{etcdbackupschedule.ScheduleLabel: schedule}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b etcdv1beta2.EtcdBackup) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// operatorPods returns the UIDs of the backup operator's pods.
func operatorPods(t testing.TB, f *framework.Framework) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "backup-operator-") && p.DeletionTimestamp == nil {
			uids = append(uids, string(p.UID))
		}
	}
	slices.Sort(uids)
	return uids
}

// TestBackupScheduleEveryMinute runs an EtcdBackupSchedule `*/1 * * * *` with retention
// maxBackups 2 and successfulBackupsHistoryLimit 2 for real, three runs (about three minutes,
// in parallel with the other tests; three are the fewest that make retention and the history
// limit delete one): one EtcdBackup per minute with none missed, the history limit keeps the
// two newest EtcdBackups, and the bucket holds exactly the two objects those point to.
// Then spec.suspend is set on the running operator: the Ready condition turns Suspended and
// the next minute passes without a run.
func TestBackupScheduleEveryMinute(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeABS)
	ns := f.CreateNamespace(t, "backup-schedule")
	bucket.CreateSecret(t, f, ns, "creds") // before the pod: see secretsFirst
	member := singleMember(t, f, ns)
	putKeys(t, f.EtcdClient(t, member), "/s/", 1000, 100, 100, 2)

	const keep = 2
	f.Create(t, &etcdv1beta2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minutely"},
		Spec: etcdv1beta2.BackupScheduleSpec{
			Schedule:                      "*/1 * * * *",
			Retention:                     &etcdv1beta2.RetentionPolicy{MaxBackups: ptr.To[int32](keep)},
			SuccessfulBackupsHistoryLimit: ptr.To[int32](keep),
			BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
				EtcdEndpoints: []string{member},
				StorageType:   bucket.Type,
				BackupSource:  bucket.Source("db/etcd.backup", "creds"),
			}},
		},
	})
	start := time.Now()

	// Three runs: every EtcdBackup ever seen, and when each completed.
	const runs = keep + 1
	seen := map[string]bool{}
	completed := map[string]bool{}
	var children []etcdv1beta2.EtcdBackup
	framework.Eventually(t, (runs+2)*time.Minute, fmt.Sprintf("%d completed scheduled backups", runs), func(ctx context.Context) (bool, error) {
		var err error
		if children, err = scheduleChildren(ctx, f, ns, "minutely"); err != nil {
			return false, err
		}
		for _, b := range children {
			seen[b.Name] = true
			switch b.Status.Phase {
			case etcdv1beta2.BackupPhaseCompleted:
				completed[b.Name] = true
			case etcdv1beta2.BackupPhaseFailed:
				t.Fatalf("scheduled backup %s failed: %s", b.Name, b.Status.Reason)
			}
		}
		return len(completed) >= runs, fmt.Errorf("%d backups seen, %d completed", len(seen), len(completed))
	})
	names := sortedKeys(seen)
	t.Logf("%d runs in %s: %v", len(names), time.Since(start).Round(time.Second), names)
	first, err := time.Parse("200601021504", strings.TrimPrefix(names[0], "minutely-"))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names[:runs] {
		if want := etcdbackupschedule.BackupName("minutely", first.Add(time.Duration(i)*time.Minute)); name != want {
			t.Fatalf("run %d is %s, want %s: a minute was missed or run twice (all: %v)", i, name, want, names)
		}
	}

	// History: the two newest EtcdBackups stay. Retention: their two objects stay, and nothing
	// else under the prefix.
	var kept []etcdv1beta2.EtcdBackup
	var want, got []string
	framework.Eventually(t, time.Minute, "history limit and retention maxBackups applied", func(ctx context.Context) (bool, error) {
		var err error
		if kept, err = scheduleChildren(ctx, f, ns, "minutely"); err != nil {
			return false, err
		}
		want = want[:0]
		for _, b := range kept {
			if b.Status.Phase == etcdv1beta2.BackupPhaseCompleted {
				want = append(want, strings.TrimPrefix(b.Status.Location, fmt.Sprintf("%s://%s/", bucket.Type, bucket.Name)))
			}
		}
		slices.Sort(want)
		got = bucket.Keys(t, "db/")
		return len(kept) == keep && slices.Equal(want, got), fmt.Errorf("%d EtcdBackups %v, objects of the completed ones %v, bucket %v",
			len(kept), objectNames(kept), want, got)
	})
	for _, b := range kept {
		seen[b.Name] = true
	}
	if names = sortedKeys(seen); !slices.Equal(objectNames(kept), names[len(names)-keep:]) {
		t.Fatalf("kept EtcdBackups %v, want the newest %d of %v", objectNames(kept), keep, names)
	}
	t.Logf("kept %v; bucket holds %v", objectNames(kept), got)

	// Suspend on the running operator.
	operator := operatorPods(t, f)
	s := &etcdv1beta2.EtcdBackupSchedule{}
	if err := f.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "minutely"}, s); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(s.DeepCopy())
	suspend := true
	s.Spec.Suspend = &suspend
	if err := f.Client.Patch(t.Context(), s, patch); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, "schedule Ready=False/Suspended", func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "minutely"}, s); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == etcdv1beta2.ReasonScheduleSuspended &&
			s.Status.NextScheduleTime == nil, fmt.Errorf("Ready %+v, nextScheduleTime %v", c, s.Status.NextScheduleTime)
	})
	// A run would be created within seconds of the next minute; watch until 15 s past it.
	until := time.Now().Truncate(time.Minute).Add(time.Minute + 15*time.Second)
	t.Logf("suspended; watching for runs until %s", until.UTC().Format(time.TimeOnly))
	for time.Now().Before(until) {
		now, err := scheduleChildren(t.Context(), f, ns, "minutely")
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range now {
			if !seen[b.Name] {
				t.Fatalf("suspended schedule created %s", b.Name)
			}
		}
		time.Sleep(framework.PollInterval)
	}
	if after := operatorPods(t, f); !slices.Equal(operator, after) {
		t.Fatalf("the backup operator's pods changed during the test (%v -> %v; redeployed by someone?): the edit was not shown to take effect without a restart, rerun",
			operator, after)
	}
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func objectNames(bs []etcdv1beta2.EtcdBackup) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}
