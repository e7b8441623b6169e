package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

func TestMaxUnavailable(t *testing.T) {
	for size, want := range map[int32]int32{1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1} {
		if got := maxUnavailable(size); got != want {
			t.Errorf("maxUnavailable(%d) = %d, want %d", size, got, want)
		}
	}
}

func getPDB(ns string) (*policyv1.PodDisruptionBudget, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "c"}, pdb)
	return pdb, err
}

// TestDisruptionBudgetAndSpread: a cluster gets a PodDisruptionBudget over its members that
// follows spec.size (3: one voluntary disruption, 1: none), and its members prefer distinct
// nodes.
func TestDisruptionBudgetAndSpread(t *testing.T) {
	ctx := context.Background()
	ns, f := grown(t, "pdb", 3)
	c := getCluster(t, ns, "c")
	pdb, err := getPDB(ns)
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(pdb); ref == nil || ref.UID != c.UID {
		t.Errorf("PDB controller %v, want the cluster", ref)
	}
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil ||
		pdb.Spec.Selector == nil || pdb.Spec.Selector.MatchLabels["etcd_cluster"] != "c" || pdb.Spec.Selector.MatchLabels["app"] != "etcd" {
		t.Errorf("PDB spec %+v, want maxUnavailable 1 over app=etcd,etcd_cluster=c", pdb.Spec)
	}
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c-1"}, pod); err != nil {
		t.Fatal(err)
	}
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 ||
		len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("member affinity %+v, want preferred anti-affinity only", a)
	}
	if term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0]; term.Weight != 100 || term.PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
		t.Fatalf("anti-affinity term %+v, want weight 100 on kubernetes.io/hostname", term)
	}
	if term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[1]; term.Weight != 50 || term.PodAffinityTerm.TopologyKey != "topology.kubernetes.io/zone" {
		t.Fatalf("anti-affinity term %+v, want weight 50 on topology.kubernetes.io/zone", term)
	}
	updateCluster(t, ns, func(c *etcdv1beta2.EtcdCluster) { c.Spec.Size = 1 })
	waitConverged(t, ns, f, 1)
	testutil.Eventually(t, testutil.Timeout, "PDB follows size 1", testutil.NoError(func() error {
		pdb, err := getPDB(ns)
		if err == nil && (pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(0)) {
			err = fmt.Errorf("maxUnavailable %v, want 0", pdb.Spec.MaxUnavailable)
		}
		return err
	}))
}

// TestForeignDisruptionBudgetNotTakenOver: a PodDisruptionBudget named like the cluster that
// the cluster does not control stays as it is; the cluster still runs and says NotOwned.
func TestForeignDisruptionBudgetNotTakenOver(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "pdbforeign")
	theirs := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}}}}
	if err := k8s.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, newCluster(ns, "c", 1)); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, ns, fakeFor(clusterConfig(ns)), 1)
	testutil.Eventually(t, testutil.Timeout, "Degraded NotOwned", testutil.NoError(func() error {
		if c := getCluster(t, ns, "c"); condition(c, "Degraded") != "True/NotOwned" {
			return fmt.Errorf("Degraded %s", condition(c, "Degraded"))
		}
		return nil
	}))
	pdb, err := getPDB(ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(pdb.OwnerReferences) != 0 || pdb.Spec.MaxUnavailable != nil || pdb.Spec.Selector.MatchLabels["app"] != "theirs" {
		t.Fatalf("foreign PDB changed: owners %v spec %+v", pdb.OwnerReferences, pdb.Spec)
	}
}

// TestSeedVolumeWithoutPodGetsNoPlainMember: bootstrap.restore, cluster not formed, the seed's
// volume exists (the restore operator made it) but its pod does not yet: the operator waits
// and never starts a plain empty member on that volume.
func TestSeedVolumeWithoutPodGetsNoPlainMember(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "seedrace")
	c := withPVC(newCluster(ns, "c", 3))
	c.Spec.Bootstrap = &etcdv1beta2.BootstrapSpec{Restore: &etcdv1beta2.RestoreBootstrap{RestoreName: "r", SeedMember: "c-0"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	pvc := member.NewPVC(c, "c-0")
	pvc.Labels["etcd.database.coreos.com/restore"] = "r"
	if err := controllerutil.SetControllerReference(c, pvc, k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	anotherPass(t, ns)
	testutil.Consistently(t, 3*time.Second, "no pod on the seed's volume", testutil.NoError(func() error {
		if pods := podNames(t, ns); len(pods) != 0 {
			return fmt.Errorf("pods %v", pods)
		}
		if c := getCluster(t, ns, "c"); condition(c, "Progressing") != "True/WaitingForSeed" {
			return fmt.Errorf("Progressing %s", condition(c, "Progressing"))
		}
		return nil
	}))
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil || pvc.DeletionTimestamp != nil {
		t.Fatalf("seed volume: %v, deletion %v; want it kept", err, pvc.DeletionTimestamp)
	}
}

func TestPodStuck(t *testing.T) {
	deleted := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		deletion    *time.Time
		grace       int64
		now         time.Time
		terminating bool
		stuck       bool
	}{
		{"running", nil, 0, deleted.Add(time.Hour), false, false},
		{"terminating within grace", &deleted, 30, deleted.Add(30*time.Second + podStuckGrace), true, false},
		{"terminating past grace and podStuckGrace", &deleted, 30, deleted.Add(30*time.Second + podStuckGrace + time.Second), true, true},
		{"no grace period recorded", &deleted, -1, deleted.Add(podStuckGrace + time.Second), true, true},
		// The deletion timestamp of an evicted pod is its eviction plus its grace period.
		{"evicted from a lost node, before its deletion timestamp", &deleted, 30, deleted.Add(-time.Second), true, false},
		{"evicted from a lost node, past its deletion timestamp", &deleted, 30, deleted.Add(time.Second), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0"}}
			if strings.HasPrefix(tc.name, "evicted") {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
			}
			if tc.deletion != nil {
				p.DeletionTimestamp = &metav1.Time{Time: *tc.deletion}
			}
			if tc.grace >= 0 && tc.deletion != nil {
				p.DeletionGracePeriodSeconds = ptrTo(tc.grace)
			}
			s := podState(p, tc.now)
			if s.Terminating != tc.terminating || s.Stuck != tc.stuck {
				t.Fatalf("podState = terminating %t stuck %t, want %t %t", s.Terminating, s.Stuck, tc.terminating, tc.stuck)
			}
		})
	}
}

// TestUnreadyForTerminating: a pod deleted from a lost node keeps counting the time since its
// Ready condition turned False (the node controller's doing), which the planner needs to
// replace a member on a volume whose pod is stuck terminating; a ready pod counts nothing.
func TestUnreadyForTerminating(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1", DeletionTimestamp: &metav1.Time{Time: now.Add(-time.Minute)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-6 * time.Minute))},
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reasonTaintEviction}}}}
	if s := podState(p, now); !s.Stuck || s.UnreadyFor != 6*time.Minute {
		t.Fatalf("podState = stuck %t, unready for %s; want stuck, 6m0s", s.Stuck, s.UnreadyFor)
	}
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	if s := podState(p, now); s.UnreadyFor != 0 {
		t.Fatalf("a ready pod: unready for %s, want 0", s.UnreadyFor)
	}
}
