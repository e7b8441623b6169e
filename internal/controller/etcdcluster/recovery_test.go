package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func recoveries(t *testing.T, ns string) []etcdv1beta2.EtcdRestore {
	t.Helper()
	l := &etcdv1beta2.EtcdRestoreList{}
	if err := k8s.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// nightlyBackedUp creates EtcdBackupSchedule nightly of cluster c whose newest successful
// backup is age old.
func nightlyBackedUp(t *testing.T, ns string, age time.Duration) {
	t.Helper()
	ctx := context.Background()
	sched := &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: etcdv1beta2.BackupScheduleSpec{
		Schedule: "0 3 * * *",
		BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "c"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/c", AWSSecret: "aws"}}}},
	}}
	if err := k8s.Create(ctx, sched); err != nil {
		t.Fatal(err)
	}
	sched.Status.LastSuccessfulTime = &metav1.Time{Time: time.Now().Add(-age)}
	if err := k8s.Status().Update(ctx, sched); err != nil {
		t.Fatal(err)
	}
}

func deleteAllPods(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

// TestAutomaticRecovery (issue 18 item 7): with spec.recovery, a cluster whose members are all
// gone with their data is restored from its schedule's newest backup, once, and only then:
// not while a member pod exists, not before afterSeconds, not without a successful backup.
func TestAutomaticRecovery(t *testing.T) {
	ns, f := grown(t, "recovery", 3)
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Recovery = &etcdv1beta2.RecoverySpec{BackupScheduleName: "nightly", AfterSeconds: ptr.To[int32](30)}
	})
	uid := getCluster(t, ns, "c").UID

	// Every member dies but one pod is left: its data might come back. Nothing is restored.
	f.kill("c-0", "c-1", "c-2")
	deleteAllPods(t, ns, "c-1", "c-2")
	reconciler.dataLostSince.Store(string(uid), time.Now().Add(-time.Hour))
	anotherPass(t, ns)
	if rs := recoveries(t, ns); len(rs) != 0 {
		t.Fatalf("restored while a member pod exists: %v", rs[0].Name)
	}

	// The last pod goes: quorum is lost for good. No schedule with a backup yet: it says so.
	// The clock of the loss starts now (the pass above may not have reached the recovery step,
	// which forgets the moved-back clock once it sees a pod: a loaded run failed on that).
	reconciler.dataLostSince.Delete(string(uid))
	deleteAllPods(t, ns, "c-0")
	testutil.Eventually(t, testutil.Timeout, "QuorumLost, recovery waiting", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		d := condition(c, "Degraded")
		msg := degradedMsg(c)
		if d != "True/QuorumLost" || !strings.Contains(msg, "automatic recovery from EtcdBackupSchedule nightly at") {
			return fmt.Errorf("Degraded %s: %s", d, msg)
		}
		return nil
	}))
	// Past afterSeconds (the operator's clock moved back an hour), still no backup.
	reconciler.dataLostSince.Store(string(uid), time.Now().Add(-time.Hour))
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "no backup to restore", testutil.NoError(func() error {
		if msg := degradedMsg(getCluster(t, ns, "c")); !strings.Contains(msg, "EtcdBackupSchedule nightly") || !strings.Contains(msg, "impossible") {
			return fmt.Errorf("Degraded: %s", msg)
		}
		return nil
	}))
	if rs := recoveries(t, ns); len(rs) != 0 {
		t.Fatalf("restored without a backup: %v", rs[0].Name)
	}

	// A schedule with a successful backup ten minutes old: one EtcdRestore, with the loss.
	nightlyBackedUp(t, ns, 10*time.Minute)
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "an EtcdRestore", testutil.NoError(func() error {
		if n := len(recoveries(t, ns)); n != 1 {
			return fmt.Errorf("%d restores", n)
		}
		return nil
	}))
	rs := recoveries(t, ns)[0]
	if rs.Spec.EtcdCluster.Name != "c" || rs.Spec.BackupScheduleRef == nil || rs.Spec.BackupScheduleRef.Name != "nightly" || rs.Spec.ClusterTemplate != nil ||
		rs.Labels[etcdv1beta2.LabelRecoveryOf] != "c" || rs.Annotations[etcdv1beta2.AnnotationLastRevision] != "1000" || rs.Annotations[etcdv1beta2.AnnotationQuorumLostAt] == "" {
		t.Fatalf("restore %s: spec %+v labels %v annotations %v", rs.Name, rs.Spec, rs.Labels, rs.Annotations)
	}
	testutil.Eventually(t, testutil.Timeout, "an AutomaticRecovery warning", testutil.NoError(func() error { return warningEvents(ns, "AutomaticRecovery", 1) }))
	// Once per incident.
	anotherPass(t, ns)
	if n := len(recoveries(t, ns)); n != 1 {
		t.Fatalf("%d restores after another pass", n)
	}
}

// TestAutomaticRecoveryOnlyFromItsOwnRecentBackup (issue 30 item 6): automatic recovery does
// not act while a pod the cluster controls exists under other labels, and restores nothing
// that is not this cluster's own backup or that is older than maxBackupAgeSeconds; each time
// QuorumLost says why.
func TestAutomaticRecoveryOnlyFromItsOwnRecentBackup(t *testing.T) {
	ctx := context.Background()
	ns, f := grown(t, "recovery-own", 3)
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Recovery = &etcdv1beta2.RecoverySpec{BackupScheduleName: "nightly", AfterSeconds: ptr.To[int32](30), MaxBackupAgeSeconds: ptr.To[int64](3600)}
	})
	c := getCluster(t, ns, "c")
	if c.Status.ClusterID == "" {
		t.Fatal("no cluster ID recorded")
	}
	sched := &etcdv1beta2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: etcdv1beta2.BackupScheduleSpec{
		Schedule: "0 3 * * *",
		BackupTemplate: etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{
			EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "other"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/c", AWSSecret: "aws"}}}},
	}}
	if err := k8s.Create(ctx, sched); err != nil {
		t.Fatal(err)
	}
	setLast := func(age time.Duration, location string) {
		t.Helper()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sched), sched); err != nil {
			t.Fatal(err)
		}
		sched.Status.LastSuccessfulTime = &metav1.Time{Time: time.Now().Add(-age)}
		sched.Status.LastSuccessfulLocation = location
		if err := k8s.Status().Update(ctx, sched); err != nil {
			t.Fatal(err)
		}
	}
	setLast(10*time.Minute, "")

	// Every member dies; one pod is relabelled out of the cluster's selector but still belongs
	// to it, so its data might come back.
	f.kill("c-0", "c-1", "c-2")
	deleteAllPods(t, ns, "c-1", "c-2")
	// The fake kubelet writes the pod too (a dead member turns not Ready), hence the retry.
	if err := retry.RetryOnConflict(conflictBackoff, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-0"}, p); err != nil {
			return err
		}
		p.Labels = map[string]string{"relabelled": "yes"}
		return k8s.Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	expect := func(desc, want string) {
		t.Helper()
		reconciler.dataLostSince.Store(string(c.UID), time.Now().Add(-time.Minute))
		anotherPass(t, ns)
		testutil.Eventually(t, testutil.Timeout, desc, testutil.NoError(func() error {
			if msg := degradedMsg(getCluster(t, ns, "c")); !strings.Contains(msg, want) {
				return fmt.Errorf("Degraded: %s", msg)
			}
			return nil
		}))
		if rs := recoveries(t, ns); len(rs) != 0 {
			t.Fatalf("%s: restored with EtcdRestore %s", desc, rs[0].Name)
		}
	}
	expect("a relabelled member pod", "automatic recovery waits: pod c-0 exists")
	deleteAllPods(t, ns, "c-0")

	expect("a schedule of another cluster", "EtcdBackupSchedule nightly does not back up this cluster")
	updateSchedule := func(change func(*etcdv1beta2.EtcdBackupSchedule)) {
		t.Helper()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sched), sched); err != nil {
			t.Fatal(err)
		}
		change(sched)
		if err := k8s.Update(ctx, sched); err != nil {
			t.Fatal(err)
		}
	}
	// The schedule names c, but its newest backup's key records another cluster ID. The key
	// changes first: a schedule naming c whose newest backup records no identity is one
	// automatic recovery may restore, and a pass between the two writes would (CI, flakes.md).
	setLast(10*time.Minute, "s3://bucket/c_20261127T010000Z_v00000000000000001000_"+ns+"_c_00000000000000ff")
	updateSchedule(func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.BackupTemplate.Spec.EtcdCluster.Name = "c" })
	expect("another cluster's backup", "not of this cluster (ID "+c.Status.ClusterID+")")
	// This cluster's backup, but two hours old.
	own := fmt.Sprintf("s3://bucket/c_20261127T010000Z_v00000000000000001000_%s_c_%016s", ns, c.Status.ClusterID)
	setLast(2*time.Hour, own)
	expect("a backup older than maxBackupAgeSeconds", "more than recovery.maxBackupAgeSeconds (3600)")

	setLast(10*time.Minute, own)
	reconciler.dataLostSince.Store(string(c.UID), time.Now().Add(-time.Minute))
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "an EtcdRestore of its own recent backup", testutil.NoError(func() error {
		if n := len(recoveries(t, ns)); n != 1 {
			return fmt.Errorf("%d restores", n)
		}
		return nil
	}))
}

func degradedMsg(c *etcdv1beta2.EtcdCluster) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionDegraded {
			return cond.Message
		}
	}
	return ""
}

// TestRecoveryRecorded: a cluster seeded by an automatic recovery's restore records the loss.
func TestRecoveryRecorded(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "recorded")
	lost := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	rs := &etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-recovery-1",
		Labels:      map[string]string{etcdv1beta2.LabelRecoveryOf: "c"},
		Annotations: map[string]string{etcdv1beta2.AnnotationQuorumLostAt: lost.Format(time.RFC3339), etcdv1beta2.AnnotationLastRevision: "5000"}},
		Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "c"}, BackupScheduleRef: &etcdv1beta2.LocalObjectReference{Name: "nightly"}}}
	if err := k8s.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	rs.Status.BackupTime = &metav1.Time{Time: lost.Add(-90 * time.Second)}
	rs.Status.BackupRevision = 4200
	if err := k8s.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	c := newCluster(ns, "c", 3)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: rs.Name, SeedMember: "c-seed"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "status.lastRecovery", testutil.NoError(func() error {
		r := getCluster(t, ns, "c").Status.LastRecovery
		if r == nil || r.RestoreName != rs.Name || r.RPOSeconds != 90 || r.RPORevisions != 800 || r.QuorumLostAt == nil || !r.QuorumLostAt.Equal(&metav1.Time{Time: lost}) {
			return fmt.Errorf("lastRecovery %+v", r)
		}
		return nil
	}))
}

// TestRecoveryName: the EtcdRestore of an automatic recovery has a name that fits the label
// values it becomes (the restore's pods carry it), also for the longest cluster names (56
// characters), one name per attempt, the same name for the same attempt.
func TestRecoveryName(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	for _, cluster := range []string{"c", "example-etcd-cluster", "a" + strings.Repeat("b", 38), "a" + strings.Repeat("b", 39), "a" + strings.Repeat("b", 55)} {
		name := recoveryName(cluster, at)
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			t.Errorf("recoveryName(%q) = %q (%d characters): %v", cluster, name, len(name), errs)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("recoveryName(%q) = %q: %v", cluster, name, errs)
		}
		if !strings.HasSuffix(name, "-recovery-20261127010203") {
			t.Errorf("recoveryName(%q) = %q, want the time of the attempt at the end", cluster, name)
		}
		if again := recoveryName(cluster, at); again != name {
			t.Errorf("recoveryName(%q) gave %q, then %q", cluster, name, again)
		}
		if next := recoveryName(cluster, at.Add(time.Second)); next == name {
			t.Errorf("recoveryName(%q) gave %q for two attempts", cluster, name)
		}
	}
	if got := recoveryName("c", at); got != "c-recovery-20261127010203" {
		t.Errorf("recoveryName(c) = %q, want c-recovery-20261127010203 (a short name is kept as it is)", got)
	}
	long := "a" + strings.Repeat("b", 54)
	if a, b := recoveryName(long+"x", at), recoveryName(long+"y", at); a == b {
		t.Errorf("two clusters share the recovery name %q", a)
	}
}

// TestAutomaticRecoveryWaitsForAPartitionedNode (issue 30 item 6): every member pod is gone, one
// of them force-deleted while its node is not Ready (a partition: its etcd may still run there
// with its data). Automatic recovery restores nothing and says why, until the node is deleted
// (the administrator's word that it is gone); then it restores, once.
func TestAutomaticRecoveryWaitsForAPartitionedNode(t *testing.T) {
	ctx := context.Background()
	ns, f := grown(t, "recovery-partition", 3)
	uid := getCluster(t, ns, "c").UID

	// c-0 runs on a Ready node, and the operator records it.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-far"}}
	if err := k8s.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	setNodeReady := func(status corev1.ConditionStatus) {
		t.Helper()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := k8s.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	setNodeReady(corev1.ConditionTrue)
	if err := k8s.SubResource("binding").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-0"}},
		&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "c-0"}, Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "c-0's node in status", testutil.NoError(func() error {
		for _, d := range getCluster(t, ns, "c").Status.Members.Details {
			if d.Name == "c-0" && d.NodeName == node.Name {
				return nil
			}
		}
		return fmt.Errorf("details %+v", getCluster(t, ns, "c").Status.Members.Details)
	}))

	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) {
		c.Spec.Recovery = &etcdv1beta2.RecoverySpec{BackupScheduleName: "nightly", AfterSeconds: ptr.To[int32](30)}
	})
	nightlyBackedUp(t, ns, 10*time.Minute)

	// The partition: c-0's node stops answering, every member is unreachable, and the pods are
	// force-deleted (c-0's would otherwise stay Terminating, which recovery already waits for).
	setNodeReady(corev1.ConditionUnknown)
	f.kill("c-0", "c-1", "c-2")
	for _, n := range []string{"c-0", "c-1", "c-2"} {
		if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, testutil.Timeout, "no pod left", testutil.NoError(func() error {
		if pods := podNames(t, ns); len(pods) != 0 {
			return fmt.Errorf("pods %v", pods)
		}
		return nil
	}))
	reconciler.dataLostSince.Store(string(uid), time.Now().Add(-time.Hour))
	anotherPass(t, ns)
	want := "member c-0 last ran on node " + node.Name + ", which is not Ready"
	testutil.Eventually(t, testutil.Timeout, "recovery waiting for the node", testutil.NoError(func() error {
		if msg := degradedMsg(getCluster(t, ns, "c")); !strings.Contains(msg, want) {
			return fmt.Errorf("Degraded: %s", msg)
		}
		return nil
	}))
	if rs := recoveries(t, ns); len(rs) != 0 {
		t.Fatalf("restored over a member that may still run behind a partition: %s", rs[0].Name)
	}

	// The administrator deletes the node: nothing of it comes back. One restore.
	if err := k8s.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	reconciler.dataLostSince.Store(string(uid), time.Now().Add(-time.Hour))
	anotherPass(t, ns)
	testutil.Eventually(t, testutil.Timeout, "an EtcdRestore once the node is deleted", testutil.NoError(func() error {
		if n := len(recoveries(t, ns)); n != 1 {
			return fmt.Errorf("%d restores; Degraded: %s", n, degradedMsg(getCluster(t, ns, "c")))
		}
		return nil
	}))
}
