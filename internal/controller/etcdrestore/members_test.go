package etcdrestore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// restoredOK is the restore step's result of a member that restored the test backup.
const restoredOK = `{"outcome":"Restored","revision":201,"hashKV":777}`

// startParallel creates a drill of the test backup into a new 3-member cluster name and
// returns the cluster and the three member pods the restore created at once.
func startParallel(t *testing.T, ns, name string) (*etcdv1beta2.EtcdCluster, []*corev1.Pod) {
	t.Helper()
	s := newStore(t, ns)
	create(t, pvcCluster(ns, "tmpl", 3))
	create(t, s.drill(ns, name, name, "etcd.backup"))
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, waitPod(t, ns, fmt.Sprintf("%s-%d", name, i)))
	}
	c, err := getCluster(t, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return c, pods
}

// TestRestoresEveryMemberAtOnce: a restore into a 3-member cluster creates all three members
// from the backup at once, each restoring with its own name and the shared initial cluster and
// token, each on its own volume, all controlled by the cluster; success still needs every
// member verified.
func TestRestoresEveryMemberAtOnce(t *testing.T) {
	ns := namespace(t)
	c, pods := startParallel(t, ns, "par")
	names := []string{"par-0", "par-1", "par-2"}
	if b := c.Spec.Bootstrap.Restore; b.SeedMember != "par-0" || strings.Join(b.Members, ",") != strings.Join(names, ",") {
		t.Fatalf("bootstrap %+v, want seed par-0 and members %v", b, names)
	}
	var initial []string
	for _, n := range names {
		initial = append(initial, n+"="+member.PeerURL(c, n))
	}
	for i, pod := range pods {
		step := pod.Spec.InitContainers[1]
		got, err := restoreseed.ParseRestoreArgs(step.Command[3:])
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != names[i] || got.InitialCluster != strings.Join(initial, ",") || got.ClusterToken != string(c.UID) || got.PeerURL != member.PeerURL(c, names[i]) {
			t.Errorf("member %s restores as %s, initial cluster %s, token %s, peer %s", names[i], got.Name, got.InitialCluster, got.ClusterToken, got.PeerURL)
		}
		if !slices.Contains(pod.Spec.Containers[0].Command, "--initial-cluster="+strings.Join(initial, ",")) {
			t.Errorf("member %s's etcd does not start with the shared initial cluster: %q", names[i], pod.Spec.Containers[0].Command)
		}
		onlyControlledBy(t, "pod "+pod.Name, pod, c)
		pvc, err := getPVC(t, ns, names[i])
		if err != nil {
			t.Fatalf("volume of %s: %v", names[i], err)
		}
		onlyControlledBy(t, "volume "+pvc.Name, pvc, c)
	}

	for i, pod := range pods {
		members.set(member.Host(c, names[i]), restoreboot.MemberState{Hash: 777, Keys: 200, Revision: 201})
		seedRuns(t, pod, restoredOK)
	}
	rs := waitCondition(t, ns, "par", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	if rs.Status.SeedMember != "par-0" || rs.Status.Verification.Hash != 777 {
		t.Fatalf("seeded: seed %s verification %+v", rs.Status.SeedMember, rs.Status.Verification)
	}
	grown(t, c, names...)
	rs = waitCondition(t, ns, "par", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	if v := rs.Status.Verification; !v.Passed || v.MembersVerified != 3 {
		t.Fatalf("verification %+v", v)
	}
}

// TestMemberFailingBeforeFormationStopsAll: one member's restore step fails for good before the
// cluster formed: the restore fails with that member's reason and stops every member's pod (none
// serves anything yet); the volumes stay with the cluster.
func TestMemberFailingBeforeFormationStopsAll(t *testing.T) {
	ns := namespace(t)
	_, pods := startParallel(t, ns, "half")
	seedRuns(t, pods[0], restoredOK)
	seedFails(t, pods[1], `{"outcome":"Failed","reason":"BackupCorrupt","message":"sha256 differs"}`)
	rs := waitCondition(t, ns, "half", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonBackupCorrupt)
	if !strings.Contains(rs.Status.Reason, "member half-1 could not restore the backup: sha256 differs") {
		t.Errorf("reason %q", rs.Status.Reason)
	}
	for _, pod := range pods {
		testutil.Eventually(t, testutil.Timeout, "pod "+pod.Name+" stopped", func() (bool, string) {
			p, err := getPod(t, ns, pod.Name)
			return gone(err, p), "still there"
		})
		if pvc, err := getPVC(t, ns, pod.Name); gone(err, pvc) {
			t.Errorf("volume %s deleted", pod.Name)
		}
	}
}

// TestMemberFailingAfterFormationIsReplaced: once the cluster formed on the members that
// restored, a member whose restore step failed for good has its pod stopped and is left to the
// etcd operator to replace; the restore goes on and succeeds once every member is verified.
func TestMemberFailingAfterFormationIsReplaced(t *testing.T) {
	ns := namespace(t)
	c, pods := startParallel(t, ns, "late")
	// The etcd operator's part: the two members that restored formed the cluster.
	c.Status.ClusterID = "abc"
	if err := k8s.Status().Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		members.set(member.Host(c, pods[i].Name), restoreboot.MemberState{Hash: 777, Keys: 200, Revision: 201})
		seedRuns(t, pods[i], restoredOK)
	}
	seedFails(t, pods[1], `{"outcome":"Failed","reason":"SeedFailed","message":"no space left on device"}`)
	testutil.Eventually(t, testutil.Timeout, "failed member's pod stopped", func() (bool, string) {
		p, err := getPod(t, ns, "late-1")
		return gone(err, p), "still there"
	})
	rs := waitCondition(t, ns, "late", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	if cond := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionFailed); cond != nil && cond.Status == "True" {
		t.Fatalf("restore failed: %+v", cond)
	}
	for _, i := range []int{0, 2} {
		if p, err := getPod(t, ns, pods[i].Name); gone(err, p) || p.UID != pods[i].UID {
			t.Fatalf("running member %s touched", pods[i].Name)
		}
	}
	// The etcd operator replaced late-1 (its own pod, not a restore's); every member matches.
	replaced := member.NewPod(c, "late-1", c.Spec.Version, "existing", "")
	replaced.OwnerReferences = append(replaced.OwnerReferences, controllerRef(c))
	testutil.Eventually(t, testutil.Timeout, "replacement pod created", func() (bool, string) {
		err := k8s.Create(t.Context(), replaced)
		return err == nil, fmt.Sprint(err)
	})
	members.set(member.Host(c, "late-1"), restoreboot.MemberState{Hash: 777, Keys: 200, Revision: 205})
	grown(t, c, "late-0", "late-1", "late-2")
	rs = waitCondition(t, ns, "late", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	if v := rs.Status.Verification; !v.Passed || v.MembersVerified != 3 {
		t.Fatalf("verification %+v", v)
	}
	if p, err := getPod(t, ns, "late-1"); gone(err, p) || p.UID != replaced.UID {
		t.Fatal("the etcd operator's replacement pod was touched")
	}
}

// TestMemberFailingAfterQuorumRunsIsReplaced: two of three members restored and run etcd (a
// quorum: the cluster has formed and may serve writes) before the etcd operator recorded a
// cluster ID; the third fails for good. Only the failed member's pod is stopped: the running
// members are not.
func TestMemberFailingAfterQuorumRunsIsReplaced(t *testing.T) {
	ns := namespace(t)
	_, pods := startParallel(t, ns, "quorum")
	for _, i := range []int{0, 2} {
		seedRuns(t, pods[i], restoredOK)
	}
	seedFails(t, pods[1], `{"outcome":"Failed","reason":"SeedFailed","message":"no space left on device"}`)
	testutil.Eventually(t, testutil.Timeout, "failed member's pod stopped", func() (bool, string) {
		p, err := getPod(t, ns, "quorum-1")
		return gone(err, p) || p.UID != pods[1].UID, "still there"
	})
	// Replacing it is the etcd operator's, once it records the cluster: the restore does not
	// make it again (its passes come every 2 s while the seed does not answer).
	testutil.Consistently(t, 5*time.Second, "no new pod quorum-1", func() (bool, string) {
		_, err := getPod(t, ns, "quorum-1")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, i := range []int{0, 2} {
		if p, err := getPod(t, ns, pods[i].Name); gone(err, p) || p.UID != pods[i].UID {
			t.Fatalf("member %s, running on the restored data in a formed cluster, was stopped", pods[i].Name)
		}
	}
	if cond := meta.FindStatusCondition(getRestore(t, ns, "quorum").Status.Conditions, etcdv1beta2.RestoreConditionFailed); cond != nil && cond.Status == "True" {
		t.Fatalf("restore failed although its cluster formed: %+v", cond)
	}
}
