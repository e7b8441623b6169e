package etcdrestore

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestUnrestorableBackupLeavesClusterUntouched: an in-place restore of a backup whose checksums
// are valid but that does not restore (the check pod's etcdutl fails on it) fails with the
// check's reason before anything happens to the cluster: same UID, no deletion, no bootstrap,
// its volumes still its own, no member pod made; the check pod is gone and BackupRestorable says
// why. Before the check, the cluster was deleted first and the failure came from the new members.
func TestUnrestorableBackupLeavesClusterUntouched(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := pvcClusterWithVolumes(t, ns, "prod", 3)
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	job, pod := checkEnds(t, ns, "prod", 1, mustJSON(t, restoreseed.Result{Outcome: restoreseed.OutcomeFailed, Reason: etcdv1beta2.ReasonBackupCorrupt,
		Message: "etcdutl snapshot restore: exit status 1: invalid database"}))

	rs := waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonBackupCorrupt)
	if !strings.Contains(rs.Status.Reason, "did not restore: etcdutl snapshot restore") || !strings.HasSuffix(rs.Status.Reason, "no cluster was changed") {
		t.Errorf("reason %q", rs.Status.Reason)
	}
	if c := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupRestorable); c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonBackupCorrupt {
		t.Errorf("BackupRestorable %+v, want False/BackupCorrupt", c)
	}
	if got, err := getCluster(t, ns, "prod"); err != nil || got.UID != old.UID || got.DeletionTimestamp != nil || got.Spec.Bootstrap != nil {
		t.Fatalf("cluster touched: %v", err)
	}
	for _, name := range []string{"prod-0", "prod-1", "prod-2"} {
		if pvc, err := getPVC(t, ns, name); gone(err, pvc) || !controlledBy(pvc, old.UID) || len(pvc.OwnerReferences) != 1 {
			t.Fatalf("volume %s changed: %v %+v", name, err, pvc.OwnerReferences)
		}
	}
	pods := &corev1.PodList{}
	if err := k8s.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{member.LabelCluster: "prod"}); err != nil || len(pods.Items) > 0 {
		t.Fatalf("member pods made: %v %d", err, len(pods.Items))
	}
	// The Job is deleted with its pod (envtest has no garbage collector to show the pod go:
	// the deletion must ask for it, as the API's default for Jobs orphans their pods).
	testutil.Eventually(t, testutil.Timeout, "check Job deleted", func() (bool, string) {
		err := k8s.Get(t.Context(), client.ObjectKeyFromObject(job), job)
		return apierrors.IsNotFound(err) || job.DeletionTimestamp != nil, "still there"
	})
	if job.DeletionTimestamp != nil && !slices.Contains(job.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Errorf("check Job deleted orphaning its pod: finalizers %v", job.Finalizers)
	}

	// The check as it was made: a Job of the restore's that runs once, never a member.
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != rs.UID || ref.Kind != "EtcdRestore" || len(job.OwnerReferences) != 1 {
		t.Errorf("check Job owners %+v, want only its EtcdRestore", job.OwnerReferences)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("check Job backoffLimit %v, want 0: a failed check is an answer", job.Spec.BackoffLimit)
	}
	if pod.Labels[member.LabelCluster] != "" || pod.Spec.Hostname != "" || pod.Spec.Subdomain != "" {
		t.Errorf("check pod carries a member's identity: labels %v hostname %q subdomain %q", pod.Labels, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != restoreboot.InitRestore {
		t.Errorf("check pod runs %+v with restart policy %s, want only the restore step, once", pod.Spec.Containers, pod.Spec.RestartPolicy)
	}
	if mem := pod.Spec.Containers[0].Resources.Limits.Memory(); mem.IsZero() {
		t.Error("check pod's memory is not bounded")
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("check pod mounts volume claim %s", v.PersistentVolumeClaim.ClaimName)
		}
		if v.Name == member.DataVolume && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Value() != 2*s.backup.Size+128<<20) {
			t.Errorf("check pod's scratch volume %+v, want an emptyDir of twice the backup plus 128 MiB", v)
		}
	}
	if v, err := testutil.RestrictedViolations(pod); err != nil || len(v) > 0 {
		t.Errorf("check pod violates Pod Security restricted: %v %v", v, err)
	}
}

// TestCheckAndSeedMustAgree: members that restored another keyspace hash than the check
// computed from the same backup fail the restore.
func TestCheckAndSeedMustAgree(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := cluster(ns, "prod", 1)
	create(t, old)
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	checkPasses(t, ns, "prod", `{"outcome":"Restored","revision":201,"hashKV":555,"keys":200}`)
	rs := waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionBackupRestorable, "True/"+reasonRestorable)
	if v := rs.Status.Verification; v == nil || v.SnapshotHash != 555 || v.Keys != 200 || v.Revision != 201 {
		t.Fatalf("verification after the check %+v", v)
	}
	c := waitRestoring(t, ns, "prod", old.UID)
	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: 201, Hash: 777, Keys: 200})
	rs = waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonVerificationFailed)
	if !strings.Contains(rs.Status.Reason, "restore check computed 555") {
		t.Errorf("reason %q", rs.Status.Reason)
	}
}
