//go:build e2e && upgrade

// Package upgrade holds the e2e test of upgrading the whole suite (CRDs, RBAC, the three
// operators) from the previous release to the working tree's on the local cluster, with work in
// flight. hack/upgrade-test.sh builds the previous release from git (hack/previous-release) and
// runs it; without E2E_UPGRADE_PREV_DIR the test skips.
package upgrade

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const (
	// keys is the dataset of each cluster, in the backups; extraKeys are written under the same
	// prefix after the backup (a restore must take them away); afterKeys are written into the
	// cluster restored before the upgrade, after its restore (they must survive the upgrade).
	keys      = 500
	extraKeys = 50
	afterKeys = 20
	// stalledProvisioner provisions nothing: a volume of a class with it stays Pending.
	stalledProvisioner = "e2e.invalid/nothing-provisions-this"
)

// TestUpgradeWithRestoresInFlight runs the previous release with two 3-member clusters on
// volumes, "done" and "inflight", each backed up. Under it, an in-place restore of done
// succeeds (and done takes writes after it), and an in-place restore of inflight replaces the
// old cluster (retaining its volumes) and is held in Seeding: its new members' volumes are of a
// StorageClass replaced by one whose provisioner nothing runs, so the upgrade is certain to find
// the restore halfway, whatever the timing. Then the working tree's release is deployed (the
// upgrade), the class is given its provisioner back, and:
//   - the in-flight restore succeeds, and its cluster is Available with 3 members serving
//     exactly the backed-up dataset;
//   - the finished restore stays as it was (Succeeded, same completionTime: not run again), and
//     its cluster keeps its member pods and volumes (same UIDs), stays Available, and serves its
//     restored dataset and the keys written after the restore;
//   - no PersistentVolumeClaim of the namespace is deleted, except the volumes the in-flight
//     restore retained from the cluster it replaced, and those only after it succeeded (a monitor
//     checks every second from before the upgrade; they are released once it succeeded).
//
// Prints MEASURE lines: the deploy of each release (the upgrade), the in-flight restore's RTO.
func TestUpgradeWithRestoresInFlight(t *testing.T) {
	prevDir := os.Getenv("E2E_UPGRADE_PREV_DIR")
	if prevDir == "" {
		t.Skip("E2E_UPGRADE_PREV_DIR is not set: hack/upgrade-test.sh builds the previous release and runs this test")
	}
	f := framework.Global(t)
	previous, current := releases(f, prevDir)
	// Registered before the namespace, so it runs after the namespace's cleanup (which dumps a
	// failed test's namespace with the operators' logs of the release that ran it): the cluster
	// is left on the working tree's release, which the suites after this one test.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deployTimeout)
		defer cancel()
		if err := deploy(ctx, f, current); err != nil {
			t.Errorf("leaving the cluster on the working tree's release: %v", err)
		}
	})
	start := time.Now()
	if err := deploy(t.Context(), f, previous); err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASURE deploy of the previous release (%s from %s): %s", previous.image, prevDir, time.Since(start).Round(100*time.Millisecond))

	ns := f.CreateNamespace(t, "upgrade")
	bucket := framework.ObjectStores(t).NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "creds")
	class := f.HostPathClass(t, "e2e-"+ns)
	f.Create(t, newCluster(ns, "done", nil))
	f.Create(t, newCluster(ns, "inflight", &class.Name))
	backups := map[string]*etcdv1beta2.EtcdBackup{}
	for _, name := range []string{"done", "inflight"} {
		f.WaitClusterAvailable(t, ns, name, 3, 4*time.Minute)
		cli := f.EtcdClient(t, framework.ClientEndpoint(ns, name))
		framework.PutDataset(t, cli, "/"+name+"/", 0, keys)
		backups[name] = f.OneShotBackup(t, bucket, ns, name, name+"/etcd.backup", "creds")
		framework.PutDataset(t, cli, "/"+name+"/", keys, keys+extraKeys)
	}
	inflightBefore, err := f.GetCluster(t.Context(), ns, "inflight")
	if err != nil {
		t.Fatal(err)
	}

	// The finished restore, all under the previous release.
	inPlaceRestore(t, f, ns, "restore-done", "done", backups["done"].Name)
	f.WaitRestoreSucceeded(t, ns, "restore-done", 5*time.Minute)
	f.WaitClusterAvailable(t, ns, "done", 3, 2*time.Minute)
	checkKeys(t, f, ns, "done", "/done/", keys)
	// The previous release deletes the volumes it retained once the restore is verified: wait
	// for that, so that every volume left belongs to the restored cluster.
	framework.Eventually(t, 2*time.Minute, "the volumes retained by restore-done released", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "restore-done")
		if err != nil {
			return false, err
		}
		pvcs, err := volumes(ctx, f, ns, "done")
		var left []string
		for _, pvc := range pvcs {
			if pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "" {
				left = append(left, pvc.Name)
			}
		}
		return err == nil && len(left) == 0 && len(rs.Status.RetainedVolumes) == 0, fmt.Errorf("status.retainedVolumes %v, retained volumes there %v (%v)", rs.Status.RetainedVolumes, left, err)
	})
	framework.PutDataset(t, f.EtcdClient(t, framework.ClientEndpoint(ns, "done")), "/done-after/", 0, afterKeys)
	doneRestore, err := f.GetRestore(t.Context(), ns, "restore-done")
	if err != nil {
		t.Fatal(err)
	}
	donePods := podUIDs(t, f, ns, "done")
	doneVolumes := volumeUIDs(t, f, ns, "done")
	t.Logf("restore-done succeeded under the previous release (RTO %s); done's pods:%s; volumes:%s", rto(doneRestore), describe(donePods), describe(doneVolumes))

	// The in-flight restore, held in Seeding by its class.
	stalled := class.DeepCopy()
	stalled.Provisioner = stalledProvisioner
	replaceClass(t, f, stalled)
	inPlaceRestore(t, f, ns, "restore-inflight", "inflight", backups["inflight"].Name)
	var held *etcdv1beta2.EtcdRestore
	framework.Eventually(t, 3*time.Minute, "restore-inflight seeding the cluster that replaced the old one", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "restore-inflight")
		if err != nil {
			return false, err
		}
		if rs.Status.Phase == etcdv1beta2.RestorePhaseFailed || rs.Status.Succeeded {
			t.Fatalf("restore-inflight finished under the previous release: phase %s, reason %s", rs.Status.Phase, rs.Status.Reason)
		}
		c, err := f.GetCluster(ctx, ns, "inflight")
		if err != nil {
			return false, err
		}
		replaced := c.UID != inflightBefore.UID && c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil
		// Once replaced, the new members' volumes are Pending: the stall holds (nothing restored
		// runs yet).
		pvcs, err := volumes(ctx, f, ns, "inflight")
		if err != nil {
			return false, err
		}
		var pending, bound []string
		for _, pvc := range pvcs {
			switch {
			case pvc.Annotations[etcdv1beta2.AnnotationRetainedBy] != "":
			case pvc.Status.Phase == corev1.ClaimPending:
				pending = append(pending, pvc.Name)
			default:
				bound = append(bound, pvc.Name)
			}
		}
		if replaced && len(bound) > 0 {
			t.Fatalf("new volumes %v of inflight are %s: the StorageClass with provisioner %s did not hold the restore", bound, corev1.ClaimBound, stalledProvisioner)
		}
		held = rs
		return replaced && rs.Status.Phase == etcdv1beta2.RestorePhaseSeeding && len(rs.Status.RetainedVolumes) == 3 && len(pending) > 0,
			fmt.Errorf("phase %s, retained %v, cluster replaced %t, new volumes pending %v", rs.Status.Phase, rs.Status.RetainedVolumes, replaced, pending)
	})
	before := volumeUIDs(t, f, ns, "")
	retained := map[string]bool{}
	for _, name := range held.Status.RetainedVolumes {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
			t.Fatalf("restore-inflight records retained volume %s: %v", name, err)
		}
		t.Logf("retained volume %s: phase %s, owners %+v, %s=%s, %s=%s", name, pvc.Status.Phase, pvc.OwnerReferences,
			etcdv1beta2.AnnotationRetainedBy, pvc.Annotations[etcdv1beta2.AnnotationRetainedBy], etcdv1beta2.AnnotationRestoreUID, pvc.Annotations[etcdv1beta2.AnnotationRestoreUID])
		retained[name] = true
	}
	inflightPods := podUIDs(t, f, ns, "inflight")
	if c, err := f.GetCluster(t.Context(), ns, "inflight"); err == nil {
		t.Logf("inflight replaced: bootstrap.restore %+v; pods:%s", *c.Spec.Bootstrap.Restore, describe(inflightPods))
	}
	t.Logf("upgrading with restore-inflight in phase %s (%s), retaining %v; volumes:%s", held.Status.Phase, progress(held), held.Status.RetainedVolumes, describe(before))
	saveOperatorLogs(t, f, ns, "previous")

	// The upgrade.
	m := &monitor{f: f, ns: ns, volumes: before, retained: retained, inflight: "restore-inflight", done: doneRestore, donePods: donePods}
	m.run()
	upgrade := time.Now()
	if err := deploy(t.Context(), f, current); err != nil {
		m.Stop()
		t.Fatal(err)
	}
	t.Logf("MEASURE upgrade (deploy of the working tree's release, every operator rolled out): %s", time.Since(upgrade).Round(100*time.Millisecond))
	replaceClass(t, f, class)
	unstalled := time.Now()

	rs := f.WaitRestoreSucceeded(t, ns, "restore-inflight", 6*time.Minute)
	t.Logf("MEASURE in-flight restore: RTO %s (status.duration, held in Seeding until the upgrade was done), Succeeded %s after the upgrade began, %s after its volumes could bind",
		rto(rs), time.Since(upgrade).Round(100*time.Millisecond), time.Since(unstalled).Round(100*time.Millisecond))
	f.WaitClusterAvailable(t, ns, "inflight", 3, 2*time.Minute)
	checkKeys(t, f, ns, "inflight", "/inflight/", keys)
	// Once it succeeded, the volumes it retained go (by the etcd operator, as the restore asks).
	framework.Eventually(t, 2*time.Minute, "the volumes retained by restore-inflight released", func(ctx context.Context) (bool, error) {
		rs, err := f.GetRestore(ctx, ns, "restore-inflight")
		if err != nil {
			return false, err
		}
		pvcs, err := volumes(ctx, f, ns, "")
		var left []string
		for _, pvc := range pvcs {
			if retained[pvc.Name] && pvc.UID == before[pvc.Name] {
				left = append(left, pvc.Name)
			}
		}
		return err == nil && len(left) == 0 && len(rs.Status.RetainedVolumes) == 0, fmt.Errorf("status.retainedVolumes %v, retained volumes there %v (%v)", rs.Status.RetainedVolumes, left, err)
	})

	problems, passes, retainedSeen, readErrors := m.Stop()
	t.Logf("monitor: %d passes (%d with restore-inflight unfinished and every retained volume there), %d cut short by API errors", passes, retainedSeen, readErrors)
	for _, p := range problems {
		t.Error(p)
	}
	if retainedSeen == 0 {
		t.Error("the monitor never saw the retained volumes while restore-inflight was unfinished")
	}

	// The finished restore and its cluster, after the upgrade.
	f.WaitClusterAvailable(t, ns, "done", 3, time.Minute)
	checkKeys(t, f, ns, "done", "/done/", keys)
	checkKeys(t, f, ns, "done", "/done-after/", afterKeys)
	if got := podUIDs(t, f, ns, "done"); !maps.Equal(got, donePods) {
		t.Errorf("done's member pods changed across the upgrade: before%s, after%s", describe(donePods), describe(got))
	}
	if got := volumeUIDs(t, f, ns, "done"); !maps.Equal(got, doneVolumes) {
		t.Errorf("done's volumes changed across the upgrade: before%s, after%s", describe(doneVolumes), describe(got))
	}
	if rs, err := f.GetRestore(t.Context(), ns, "restore-done"); err != nil || rs.Status.Phase != etcdv1beta2.RestorePhaseSucceeded || !rs.Status.CompletionTime.Equal(doneRestore.Status.CompletionTime) {
		t.Errorf("restore-done after the upgrade: err %v, phase %s, completionTime %v (was %v)", err, rs.Status.Phase, rs.Status.CompletionTime, doneRestore.Status.CompletionTime)
	}
	after := volumeUIDs(t, f, ns, "")
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if after[name] != before[name] && !retained[name] {
			t.Errorf("volume %s (UID %s) is gone after the upgrade", name, before[name])
		}
	}
	if got := podUIDs(t, f, ns, "inflight"); !maps.Equal(got, inflightPods) {
		// Informational: the members of the previous release's in-flight restore, before their
		// volumes bound, hold no data yet.
		t.Logf("inflight's member pods after the upgrade:%s (before:%s)", describe(got), describe(inflightPods))
	}
	saveOperatorLogs(t, f, ns, "current")
	logWarnings(t, f, ns)
}

// logWarnings logs how many Warning events the namespace got, by reason, and the first 10
// that are not FailedScheduling (every member pod waits for its volume to bind): what the
// operators and the kubelet complained about across the upgrade, for the record.
func logWarnings(t *testing.T, f *framework.Framework, ns string) {
	t.Helper()
	events := &corev1.EventList{}
	if err := f.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Logf("events of %s: %v", ns, err)
		return
	}
	slices.SortFunc(events.Items, func(a, b corev1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	reasons := map[string]int{}
	var notable []string
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		reasons[e.Reason]++
		if e.Reason != "FailedScheduling" {
			notable = append(notable, fmt.Sprintf("%s %s/%s %s: %s", e.CreationTimestamp.Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message))
		}
	}
	t.Logf("Warning events in %s, by reason: %v (of %d events)", ns, reasons, len(events.Items))
	for _, w := range notable[:min(len(notable), 10)] {
		t.Logf("  %s", w)
	}
}

// progress is the restore's progress message.
func progress(rs *etcdv1beta2.EtcdRestore) string {
	for _, c := range rs.Status.Conditions {
		if c.Type == etcdv1beta2.RestoreConditionComplete {
			return c.Message
		}
	}
	return ""
}

// rto is the restore's status.duration (0 when it records none).
func rto(rs *etcdv1beta2.EtcdRestore) time.Duration {
	if rs.Status.Duration == nil {
		return 0
	}
	return rs.Status.Duration.Duration
}
