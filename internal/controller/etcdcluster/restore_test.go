package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/etcdaccess"
)

// memberFigures is the fake RestoreCheck: what each member (by pod name) serves.
var memberFigures sync.Map // "<ns>/<pod>" -> restoreboot.MemberState

func fakeRestoreCheck(_ context.Context, endpoint, _ string, _ etcdaccess.Access, _ int64) (restoreboot.MemberState, error) {
	host := strings.Split(strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://"), ".")
	if len(host) < 3 {
		return restoreboot.MemberState{}, fmt.Errorf("no member at %s", endpoint)
	}
	st, ok := memberFigures.Load(host[2] + "/" + host[0])
	if !ok {
		return restoreboot.MemberState{}, fmt.Errorf("member %s does not answer", host[0])
	}
	return st.(restoreboot.MemberState), nil
}

const sourceSHA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// sourceCluster is a cluster of size members built from a backup in S3.
func sourceCluster(ns string, size int32) *etcdv1beta2.EtcdCluster {
	c := newCluster(ns, "c", size)
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{Source: &etcdv1beta2.RestoreSource{
		StorageType:  etcdv1beta2.BackupStorageTypeS3,
		BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bkt/" + ns + "/c/snap.db", AWSSecret: "aws"}},
		SHA256:       sourceSHA, Size: 20480, Revision: 200,
	}}}
	return c
}

// waitRestorePods waits for the restored members' pods and checks they are the cluster's own,
// restoring the pinned backup with the full initial cluster.
func waitRestorePods(t *testing.T, c *etcdv1beta2.EtcdCluster, names ...string) map[string]*corev1.Pod {
	t.Helper()
	pods := map[string]*corev1.Pod{}
	testutil.Eventually(t, testutil.Timeout, "restore member pods", testutil.NoError(func() error {
		if got := podNames(t, c.Namespace); !slices.Equal(got, names) {
			return fmt.Errorf("pods %v, want %v", got, names)
		}
		return nil
	}))
	for _, name := range names {
		p := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != c.UID || len(p.OwnerReferences) != 1 {
			t.Fatalf("pod %s owners %v: want the cluster alone", name, p.OwnerReferences)
		}
		if !restoreboot.IsRestorePod(p) {
			t.Fatalf("pod %s has no restore step: %v", name, p.Spec.InitContainers)
		}
		args := strings.Join(p.Spec.InitContainers[1].Command, " ")
		for _, want := range []string{"--sha256=" + sourceSHA, "--size=20480", "--initial-cluster=" + restoreboot.Initial(c, names), "--bump-revision=1000000000"} {
			if !strings.Contains(args, want) {
				t.Fatalf("pod %s restore step %q lacks %q", name, args, want)
			}
		}
		pods[name] = p
	}
	return pods
}

// restoreReports sets what a kubelet would report for p: the restore step's result as its
// termination message, and etcd running (ok) or the step failed (!ok).
func restoreReports(t *testing.T, p *corev1.Pod, res restoreseed.Result, ok bool) {
	t.Helper()
	msg, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "pod status of "+p.Name, testutil.NoError(func() error {
		cur := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		exit := int32(0)
		cur.Status.Phase = corev1.PodPending
		cur.Status.ContainerStatuses = nil
		if ok {
			cur.Status.Phase = corev1.PodRunning
			cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.ContainerName, Image: cur.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		} else {
			exit = 1
		}
		cur.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: restoreboot.InitRestore, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: string(msg)}}}}
		return k8s.Status().Update(context.Background(), cur)
	}))
}

// formFake makes the fake etcd hold the restored members, as etcdutl snapshot restore with
// the full initial cluster makes them.
func formFake(c *etcdv1beta2.EtcdCluster, names ...string) *fakeEtcd {
	f := fakeFor(cluster.Config{Endpoints: []string{member.ClientURL(c, names[0])}})
	f.set(func(f *fakeEtcd) {
		for _, n := range names {
			f.nextID++
			f.members = append(f.members, cluster.Member{ID: f.nextID, PeerURLs: []string{member.PeerURL(c, n)}})
		}
	})
	return f
}

func restoredCondition(t *testing.T, ns string) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(getCluster(t, ns, "c").Status.Conditions, etcdv1beta2.ClusterConditionRestored)
}

// TestBuildsMembersFromSource: an EtcdCluster applied with bootstrap.restore.source (no
// EtcdRestore, no restore operator) gets every member's pod from the etcd operator, controlled
// by the cluster alone, each restoring the pinned backup with the full initial cluster. Once
// they run, the cluster is verified member by member against what the restore reported and only
// then is it Available, with Restored=True and the figures in status.restore.
func TestBuildsMembersFromSource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-restore")
	c := sourceCluster(ns, 3)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	names := []string{"c-0", "c-1", "c-2"}
	pods := waitRestorePods(t, c, names...)
	if cond := restoredCondition(t, ns); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != etcdv1beta2.ReasonRestoring {
		t.Fatalf("Restored = %+v while the members restore, want False/Restoring", cond)
	}
	formFake(c, names...)
	res := restoreseed.Result{Outcome: restoreseed.OutcomeRestored, Revision: 1_000_000_200, BackupRevision: 200, HashKV: 777, Keys: 150, SHA256: sourceSHA}
	for _, n := range names {
		memberFigures.Store(ns+"/"+n, restoreboot.MemberState{Hash: 777, Keys: 150, Revision: 1_000_000_200})
	}
	// Two members run: the cluster is not taken over (nor Available) before every restored
	// member answers.
	restoreReports(t, pods["c-0"], res, true)
	restoreReports(t, pods["c-1"], res, true)
	testutil.Consistently(t, 2*time.Second, "not taken over with 2 of 3 members running", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); c.Status.ClusterID != "" || meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) {
			return fmt.Errorf("cluster ID %q, Available %s", c.Status.ClusterID, condition(c, "Available"))
		}
		return nil
	}))
	restoreReports(t, pods["c-2"], res, true)
	testutil.Eventually(t, testutil.Timeout, "Restored and Available", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, etcdv1beta2.ClusterConditionRestored) != "True/"+etcdv1beta2.ReasonRestoreSucceeded || condition(c, "Available") != "True/ClusterHealthy" {
			return fmt.Errorf("Restored %s, Available %s", condition(c, etcdv1beta2.ClusterConditionRestored), condition(c, "Available"))
		}
		return nil
	}))
	got := getCluster(t, ns, "c").Status.Restore
	want := etcdv1beta2.ClusterRestoreStatus{Members: names, Revision: 1_000_000_200, BackupRevision: 200, Hash: 777, Keys: 150, SHA256: sourceSHA, MembersVerified: 3}
	if got == nil || got.CompletionTime == nil {
		t.Fatalf("status.restore = %+v", got)
	}
	got.CompletionTime = nil
	if fmt.Sprint(*got) != fmt.Sprint(want) {
		t.Fatalf("status.restore = %+v, want %+v", *got, want)
	}
	if got := podNames(t, ns); !slices.Equal(got, names) {
		t.Fatalf("pods %v, want the restored members %v alone", got, names)
	}
}

// TestRestoredMemberMismatchIsNeverAvailable: a member that serves another keyspace than the
// backup restored leaves the cluster Restored=False VerificationFailed and not Available, and
// nothing is deleted (it formed: it may hold writes).
func TestRestoredMemberMismatchIsNeverAvailable(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-mismatch")
	c := sourceCluster(ns, 3)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	names := []string{"c-0", "c-1", "c-2"}
	pods := waitRestorePods(t, c, names...)
	formFake(c, names...)
	res := restoreseed.Result{Outcome: restoreseed.OutcomeRestored, Revision: 1_000_000_200, BackupRevision: 200, HashKV: 777, Keys: 150}
	for _, n := range names {
		memberFigures.Store(ns+"/"+n, restoreboot.MemberState{Hash: 777, Keys: 150, Revision: 1_000_000_200})
	}
	memberFigures.Store(ns+"/c-2", restoreboot.MemberState{Hash: 778, Keys: 149, Revision: 1_000_000_200})
	for _, n := range names {
		restoreReports(t, pods[n], res, true)
	}
	testutil.Eventually(t, testutil.Timeout, "VerificationFailed", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, etcdv1beta2.ClusterConditionRestored) != "False/"+etcdv1beta2.ReasonVerificationFailed {
			return fmt.Errorf("Restored %s", condition(c, etcdv1beta2.ClusterConditionRestored))
		}
		if condition(c, "Available") == "True/ClusterHealthy" || condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonRestoreFailed && condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonVerificationFailed {
			return fmt.Errorf("Available %s, Degraded %s", condition(c, "Available"), condition(c, "Degraded"))
		}
		return nil
	}))
	testutil.Consistently(t, 2*time.Second, "unverified, untouched", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1beta2.ClusterConditionAvailable) {
			return fmt.Errorf("an unverified restore became Available: %s", condition(c, "Available"))
		}
		if got := podNames(t, ns); !slices.Equal(got, names) {
			return fmt.Errorf("pods %v after a failed verification, want %v untouched", got, names)
		}
		return nil
	}))
}

// TestRestoreFailingBeforeFormationStopsEveryMember: a member whose restore step fails for
// good (a corrupt object) before the cluster formed stops every restored member's pod, the
// cluster says why (Restored=False with the step's reason, Degraded RestoreFailed), and no pod
// is created again.
func TestRestoreFailingBeforeFormationStopsEveryMember(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-corrupt")
	c := sourceCluster(ns, 3)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	pods := waitRestorePods(t, c, "c-0", "c-1", "c-2")
	restoreReports(t, pods["c-1"], restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonBackupCorrupt, Message: "sha256 of the object does not match"}, false)
	testutil.Eventually(t, testutil.Timeout, "RestoreFailed", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, etcdv1beta2.ClusterConditionRestored) != "False/"+etcdv1beta2.ReasonBackupCorrupt || condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonRestoreFailed {
			return fmt.Errorf("Restored %s, Degraded %s", condition(c, etcdv1beta2.ClusterConditionRestored), condition(c, "Degraded"))
		}
		if got := podNames(t, ns); len(got) != 0 {
			return fmt.Errorf("pods %v still there", got)
		}
		return nil
	}))
	testutil.Consistently(t, 3*time.Second, "no pod created again", testutil.NoError(func() error {
		if got := podNames(t, ns); len(got) != 0 {
			return fmt.Errorf("pods %v were created again after the restore failed", got)
		}
		return nil
	}))
	if d := meta.FindStatusCondition(getCluster(t, ns, "c").Status.Conditions, "Degraded"); !strings.Contains(d.Message, "sha256 of the object does not match") || !strings.Contains(d.Message, "apply it again") {
		t.Fatalf("Degraded message %q does not say what failed and how to retry", d.Message)
	}
}

// TestForeignPodAtAMemberNameStopsTheRestore: a pod the cluster does not control, standing at
// the name of a member to restore and looking like one that restored and runs, is neither
// taken for that member nor touched; the restore fails SeedConflict and creates nothing.
func TestForeignPodAtAMemberNameStopsTheRestore(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-foreign")
	stranger := member.NewPod(sourceCluster(ns, 1), "c-0", "3.6.16", "new", "")
	if err := k8s.Create(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	restoreReports(t, stranger, restoreseed.Result{Outcome: restoreseed.OutcomeRestored, Revision: 201, HashKV: 5}, true)
	c := sourceCluster(ns, 3)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Timeout, "SeedConflict", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, etcdv1beta2.ClusterConditionRestored) != "False/"+etcdv1beta2.ReasonSeedConflict || condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonRestoreFailed && condition(c, "Degraded") != "True/"+etcdv1beta2.ReasonSeedConflict {
			return fmt.Errorf("Restored %s, Degraded %s", condition(c, etcdv1beta2.ClusterConditionRestored), condition(c, "Degraded"))
		}
		return nil
	}))
	testutil.Consistently(t, 2*time.Second, "nothing created, the stranger untouched", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-0"}) {
			return fmt.Errorf("pods %v", got)
		}
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(stranger), p); err != nil || p.UID != stranger.UID || len(p.OwnerReferences) != 0 || p.DeletionTimestamp != nil {
			return fmt.Errorf("the stranger's pod was touched: %w %+v", err, p.ObjectMeta)
		}
		return nil
	}))
}

// TestEmptyBackupIsVerifiedAtTheSeedsRevision: a snapshot of an empty keyspace holds no key
// revision, so the restore step reports none; the seed, running on the restored data, says
// which revision it serves and what it holds there, and every member is checked at it.
func TestEmptyBackupIsVerifiedAtTheSeedsRevision(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-empty")
	c := sourceCluster(ns, 3)
	c.Spec.Bootstrap.Restore.Source.Revision = 0
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	names := []string{"c-0", "c-1", "c-2"}
	pods := waitRestorePods(t, c, names...)
	formFake(c, names...)
	for _, n := range names {
		memberFigures.Store(ns+"/"+n, restoreboot.MemberState{Hash: 1084519789, Keys: 0, Revision: 1})
		restoreReports(t, pods[n], restoreseed.Result{Outcome: restoreseed.OutcomeRestored, Message: "restored 20512 bytes at revision 0"}, true)
	}
	testutil.Eventually(t, testutil.Timeout, "Restored", testutil.NoError(func() error {
		c := getCluster(t, ns, "c")
		if condition(c, etcdv1beta2.ClusterConditionRestored) != "True/"+etcdv1beta2.ReasonRestoreSucceeded {
			return fmt.Errorf("Restored %s", condition(c, etcdv1beta2.ClusterConditionRestored))
		}
		return nil
	}))
	if st := getCluster(t, ns, "c").Status.Restore; st.Revision != 1 || st.Keys != 0 || st.Hash != 1084519789 || st.MembersVerified != 3 {
		t.Fatalf("status.restore %+v, want 3 members verified at revision 1 with no keys", st)
	}
}

// TestMemberFailingAfterQuorumRunsIsReplaced: once a quorum of the restored members runs etcd
// on the restored data, it may serve writes: a member whose restore then fails for good has only
// its own pod stopped; the others are left running.
func TestMemberFailingAfterQuorumRunsIsReplaced(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "nokubelet-late")
	c := sourceCluster(ns, 3)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	names := []string{"c-0", "c-1", "c-2"}
	pods := waitRestorePods(t, c, names...)
	ok := restoreseed.Result{Outcome: restoreseed.OutcomeRestored, Revision: 1_000_000_200, BackupRevision: 200, HashKV: 777, Keys: 150}
	restoreReports(t, pods["c-0"], ok, true)
	restoreReports(t, pods["c-1"], ok, true)
	restoreReports(t, pods["c-2"], restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonInsufficientStorage, Message: "the data volume has 10 MiB free"}, false)
	testutil.Eventually(t, testutil.Timeout, "the failed member's pod stopped", testutil.NoError(func() error {
		if got := podNames(t, ns); !slices.Equal(got, []string{"c-0", "c-1"}) {
			p := &corev1.Pod{}
			_ = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-2"}, p)
			c := getCluster(t, ns, "c")
			return fmt.Errorf("pods %v, want c-0 and c-1 (c-2 restore pod %v, created %s; restored %s, %+v)", got, restoreboot.IsRestorePod(p), p.CreationTimestamp, condition(c, etcdv1beta2.ClusterConditionRestored), c.Status.Restore)
		}
		return nil
	}))
	if c := getCluster(t, ns, "c"); restoreFailed(c) {
		t.Fatalf("Restored %s: a quorum runs on the restored data, the restore goes on", condition(c, etcdv1beta2.ClusterConditionRestored))
	}
}

// TestReplacedClusterStopsAtOnce: a cluster an in-place restore deletes (annotated replaced-by)
// has its member pods deleted with a one-second grace period by the etcd operator; pods it does
// not control are not touched, nor are the pods of a cluster deleted without the annotation.
func TestReplacedClusterStopsAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, replaced := range []bool{true, false} {
		ns := namespace(t, "nokubelet-replaced")
		c := newCluster(ns, "c", 1)
		c.Finalizers = []string{"test.etcd.database.coreos.com/hold"} // keeps it while being deleted
		if replaced {
			c.Annotations = map[string]string{etcdv1beta2.AnnotationReplacedBy: "restore-uid"}
		}
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		own := member.NewPod(c, "c-0", "3.6.16", "new", "")
		if err := controllerutil.SetControllerReference(c, own, k8s.Scheme()); err != nil {
			t.Fatal(err)
		}
		own.Spec.NodeName = "node-a" // a scheduled pod: its deletion waits out the grace period
		stranger := member.NewPod(c, "c-7", "3.6.16", "new", "")
		stranger.Spec.NodeName = "node-a"
		for _, p := range []*corev1.Pod{own, stranger} {
			if err := k8s.Create(ctx, p); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatal(err)
			}
		}
		// The operator may have made c-0 first (its seed, before the test's): then it is not
		// scheduled, and the API server deletes an unscheduled pod at once, whatever the grace
		// period, so there would be nothing to look at. Schedule it, as the scheduler would.
		seed := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(own), seed); err != nil {
			t.Fatal(err)
		}
		if seed.Spec.NodeName == "" {
			bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: seed.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
			if err := k8s.SubResource("binding").Create(ctx, seed, bind); err != nil {
				t.Fatal(err)
			}
		}
		if err := k8s.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
		check := func() error {
			p := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(own), p); err != nil {
				return err
			}
			stopped := p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 1
			if stopped != replaced {
				return fmt.Errorf("member pod deletion %v grace %v (replaced %v)", p.DeletionTimestamp, p.DeletionGracePeriodSeconds, replaced)
			}
			s := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(stranger), s); err != nil || s.DeletionTimestamp != nil {
				return fmt.Errorf("the stranger's pod was touched: %w", err)
			}
			return nil
		}
		if replaced {
			testutil.Eventually(t, testutil.Timeout, "replaced members stopped", testutil.NoError(check))
		} else {
			testutil.Consistently(t, 2*time.Second, "members of a plain deletion left to the garbage collector", testutil.NoError(check))
		}
		cur := getCluster(t, ns, "c")
		cur.Finalizers = nil
		if err := k8s.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
}
