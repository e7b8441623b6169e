package etcdrestore

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// drill is a restore of key into a new cluster copying template "tmpl".
func (s *store) drill(ns, name, cluster, key string) *etcdv1beta2.EtcdRestore {
	rs := s.restore(ns, name, cluster, key)
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	return rs
}

// TestPodAtSeedNameIsNotTheSeed: a pod this restore did not create, standing at the seed's name
// and looking like a seed that restored and runs, fails the restore with SeedConflict; it is
// neither taken for the seed nor touched.
func TestPodAtSeedNameIsNotTheSeed(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	stranger := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: member.ContainerName, Image: "x"}}},
	}
	create(t, stranger)
	seedRuns(t, stranger, `{"outcome":"Restored","revision":201,"hashKV":5}`)
	members.set(member.Host(cluster(ns, "fresh", 1), "fresh-0"), restoreboot.MemberState{Hash: 5, Keys: 200, Revision: 201})

	create(t, s.drill(ns, "drill", "fresh", "etcd.backup"))
	rs := waitCondition(t, ns, "drill", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonSeedConflict)
	if isTrue(rs.Status.Conditions, etcdv1beta2.RestoreConditionSeeded) {
		t.Fatal("a pod the restore did not create was taken for its seed")
	}
	p, err := getPod(t, ns, "fresh-0")
	if gone(err, p) || p.UID != stranger.UID || len(p.OwnerReferences) > 0 {
		t.Fatalf("the stranger's pod was touched: %v %+v", err, p.ObjectMeta)
	}
}

// TestTimedOutRestoreStopsItsSeed: a restore that times out while its seed is still restoring
// deletes that seed pod, so the kubelet stops retrying it.
func TestTimedOutRestoreStopsItsSeed(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	create(t, s.drill(ns, "slow", "slowc", "etcd.backup"))
	pod := waitPod(t, ns, "slowc-0")

	pastDeadline(t, ns, "slow")
	waitCondition(t, ns, "slow", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonTimeout)
	testutil.Eventually(t, testutil.Timeout, "seed pod stopped", func() (bool, string) {
		p, err := getPod(t, ns, "slowc-0")
		return gone(err, p) || p.UID != pod.UID, "still there"
	})
}

// TestEmptyBackupRestores: a backup of a cluster with no keys restores. Its snapshot holds no
// key revision, so the restore step may report none (etcdutl snapshot status says 0); the
// seed, alone in its cluster, says which revision it serves, and every member is checked at it.
func TestEmptyBackupRestores(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	e := snapshottest.StartEtcd(t, "")
	if _, err := snapshot.Take(t.Context(), &snapshot.Config{
		Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
		Key: func(int64, time.Time) string { return "empty.backup" },
	}, s.b); err != nil {
		t.Fatal(err)
	}
	create(t, cluster(ns, "tmpl", 3))
	create(t, s.drill(ns, "empty", "emptyc", "empty.backup"))
	pod := waitPod(t, ns, "emptyc-0")
	c, err := getCluster(t, ns, "emptyc")
	if err != nil {
		t.Fatal(err)
	}
	const hash = 1084519789
	names := []string{"emptyc-0", "emptyc-1", "emptyc-2"}
	for _, m := range names {
		members.set(member.Host(c, m), restoreboot.MemberState{Hash: hash, Keys: 0, Revision: 1})
	}
	seedRuns(t, pod, `{"outcome":"Restored","message":"restored 20512 bytes at revision 0"}`)
	rs := waitCondition(t, ns, "empty", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	if v := rs.Status.Verification; v == nil || v.Revision != 1 || v.Keys != 0 || v.Hash != hash {
		t.Fatalf("verification after seeding: %+v", v)
	}
	grown(t, c, names...)
	rs = waitCondition(t, ns, "empty", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	if v := rs.Status.Verification; !v.Passed || v.MembersVerified != 3 || v.Keys != 0 {
		t.Fatalf("verification %+v", v)
	}
	if rs.Status.RestoredRevision != 1 {
		t.Errorf("restored revision %d, want 1", rs.Status.RestoredRevision)
	}
}

// checkSeedArgs reads the seed pod's restore step the way the agent does (its own flag parser)
// and checks that it names exactly the verified object and that every Secret the location needs
// is mounted where the agent looks for it: the operator's encoding and the agent's decoding agree.
func checkSeedArgs(t *testing.T, pod *corev1.Pod, want restoreseed.Options) {
	t.Helper()
	step := pod.Spec.InitContainers[1]
	// Command: <agent> seed restore <flags>.
	if len(step.Command) < 3 || step.Command[1] != restoreseed.Command || step.Command[2] != "restore" {
		t.Fatalf("restore step command %q", step.Command)
	}
	got, err := restoreseed.ParseRestoreArgs(step.Command[3:])
	if err != nil {
		t.Fatalf("the agent cannot parse its arguments %q: %v", step.Command, err)
	}
	if !reflect.DeepEqual(got.Location, want.Location) || got.Expect != want.Expect || got.Name != want.Name || got.ClusterToken != want.ClusterToken {
		t.Fatalf("the agent would restore %+v %+v as %s/%s; want %+v %+v as %s/%s",
			got.Location, got.Expect, got.Name, got.ClusterToken, want.Location, want.Expect, want.Name, want.ClusterToken)
	}
	mounted := map[string]bool{}
	for _, m := range step.VolumeMounts {
		mounted[m.MountPath] = true
	}
	for _, name := range []string{got.Location.Secret, caSecret(got.Location)} {
		if name != "" && !mounted[filepath.Join(got.SecretsDir, name)] {
			t.Errorf("Secret %s is not mounted at %s: mounts %+v", name, filepath.Join(got.SecretsDir, name), step.VolumeMounts)
		}
	}
}

func caSecret(l storage.Location) string {
	if l.CA == nil {
		return ""
	}
	return l.CA.Name
}

// TestTimedOutRestoreLeavesAFormedCluster is the second reproduction of issue 28: the restore
// could not record Seeded before its deadline (here its seed does not answer the restore's
// checks), while its member restored and runs etcd: the etcd operator forms the cluster from
// it, and clients may write to it. The restore fails Timeout, says so, and leaves the member
// pod alone.
func TestTimedOutRestoreLeavesAFormedCluster(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	create(t, s.drill(ns, "late", "latec", "etcd.backup"))
	pod := waitPod(t, ns, "latec-0")
	seedRuns(t, pod, restoredOK) // runs etcd on the restored data; no member check answers
	waitProgress(t, ns, "late", "seed member latec-0 does not answer yet")

	pastDeadline(t, ns, "late")
	rs := waitCondition(t, ns, "late", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonTimeout)
	if !strings.Contains(rs.Status.Reason, "formed on the restored data (members latec-0 run etcd on it)") {
		t.Errorf("failure %q does not say the cluster formed and was left running", rs.Status.Reason)
	}
	if p, err := getPod(t, ns, "latec-0"); gone(err, p) || p.UID != pod.UID {
		t.Fatalf("the member of the formed cluster was stopped: %v", err)
	}
}

// TestDrillScratchClusterNeverRecovers: a drill's template has spec.recovery; its scratch
// cluster does not, so an automatic restore can never replace it with a cluster the drill did
// not make (which its TTL would then leave behind). A restore into a new name that is not a
// drill (no TTL) keeps the template's recovery: it is the user's cluster.
func TestDrillScratchClusterNeverRecovers(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	tmpl := cluster(ns, "tmpl", 1)
	tmpl.Spec.Recovery = &etcdv1beta2.RecoverySpec{BackupScheduleName: "nightly"}
	create(t, tmpl)
	drill := s.drill(ns, "drill", "scratch", "etcd.backup")
	drill.Spec.TTLSecondsAfterFinished = ptr.To(int32(600))
	create(t, drill)
	create(t, s.drill(ns, "copy", "copyc", "etcd.backup"))
	waitPod(t, ns, "scratch-0")
	waitPod(t, ns, "copyc-0")
	if c, err := getCluster(t, ns, "scratch"); err != nil || c.Spec.Recovery != nil {
		t.Fatalf("drill's scratch cluster: %v, recovery %+v", err, c.Spec.Recovery)
	}
	if c, err := getCluster(t, ns, "copyc"); err != nil || c.Spec.Recovery == nil || c.Spec.Recovery.BackupScheduleName != "nightly" {
		t.Fatalf("restore into a new name without a TTL: %v, recovery %+v", err, c.Spec.Recovery)
	}
}
