package etcdrestore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestPreflightRefusesBeforeDeleting: an in-place restore whose seed could not run fails before
// it changes anything: the old cluster keeps its UID, no pod is made, nothing is saved.
func TestPreflightRefusesBeforeDeleting(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)

	// A namespace that enforces the restricted Pod Security level: the seed pod of a cluster
	// that asks to run as root is refused by the API server's admission.
	restricted := namespace(t)
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: restricted}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if err := k8s.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	create(t, secret(restricted, "aws", s.bucket.Secret))

	// An EtcdBackup that recorded the object was taken from etcd 3.6.
	bk := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from36"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "x"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: s.bucket.Source("etcd.backup", "aws")},
	}
	create(t, bk)
	bk.Status = etcdv1beta2.BackupStatus{Succeeded: true, EtcdVersion: "3.6.16", EtcdRevision: s.backup.Member.Revision,
		Location: fmt.Sprintf("S3://%s/etcd.backup", s.bucket.Name), Size: s.backup.Size, SHA256: s.backup.SHA256}
	if err := k8s.Status().Update(t.Context(), bk); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, cname, ns, reason, want string
		edit                          func(*etcdv1beta2.EtcdCluster, *etcdv1beta2.EtcdRestore)
	}{
		{"pod security refuses the check's pod", "psa", restricted, etcdv1beta2.ReasonPreflightFailed, "refused the restore check's pod", func(c *etcdv1beta2.EtcdCluster, _ *etcdv1beta2.EtcdRestore) {
			// The default member pod passes restricted; a cluster that asks for root does not.
			c.Spec.Pod = &etcdv1beta2.PodPolicy{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}}
		}},
		{"backup from a newer etcd", "newer", ns, etcdv1beta2.ReasonIncompatibleVersion, "etcd 3.6.16 (EtcdBackup from36)", func(c *etcdv1beta2.EtcdCluster, rs *etcdv1beta2.EtcdRestore) {
			c.Spec.Version = "3.5.21"
			rs.Spec.BackupStorageType, rs.Spec.BackupSource = "", etcdv1beta2.BackupSource{}
			rs.Spec.BackupRef = &etcdv1beta2.LocalObjectReference{Name: "from36"}
		}},
		{"etcd credentials secret missing", "auth", ns, etcdv1beta2.ReasonPreflightFailed, "secret " + ns + "/no-such-credentials not found", func(c *etcdv1beta2.EtcdCluster, _ *etcdv1beta2.EtcdRestore) {
			c.Spec.Auth = &etcdv1beta2.AuthPolicy{SecretName: "no-such-credentials"}
		}},
		{"storage class missing", "class", ns, etcdv1beta2.ReasonPreflightFailed, "StorageClass no-such-class, which the members' volumes name, does not exist", func(c *etcdv1beta2.EtcdCluster, _ *etcdv1beta2.EtcdRestore) {
			c.Spec.Pod = pvcCluster(ns, "class", 3).Spec.Pod
			c.Spec.Pod.PersistentVolumeClaimSpec.StorageClassName = ptr.To("no-such-class")
		}},
		{"member TLS secret missing", "tls", ns, etcdv1beta2.ReasonPreflightFailed, "member TLS Secret no-such-secret", func(c *etcdv1beta2.EtcdCluster, _ *etcdv1beta2.EtcdRestore) {
			c.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "no-such-secret"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.cname
			c := cluster(tc.ns, name, 3)
			rs := s.restore(tc.ns, name, name, "etcd.backup")
			if tc.edit != nil {
				tc.edit(c, rs)
			}
			create(t, c)
			create(t, rs)
			if tc.cname == "psa" {
				// Everything the preflight reads passes; the check Job's pod is refused.
				if _, pod := playJob(t, tc.ns, name); pod != nil {
					t.Fatal("Pod Security admitted a pod that runs as root")
				}
			}
			got := waitCondition(t, tc.ns, name, etcdv1beta2.RestoreConditionFailed, "True/"+tc.reason)
			if !strings.Contains(got.Status.Reason, tc.want) || !strings.HasSuffix(got.Status.Reason, "no cluster was changed") {
				t.Errorf("reason %q, want it to contain %q and end with \"no cluster was changed\"", got.Status.Reason, tc.want)
			}
			if _, saved := got.Annotations[AnnotationClusterTemplate]; saved {
				t.Error("template saved: the restore went past its preflight")
			}
			if now, err := getCluster(t, tc.ns, name); err != nil || now.UID != c.UID || now.DeletionTimestamp != nil || now.Spec.Bootstrap != nil {
				t.Fatalf("cluster changed: %v", err)
			}
			pods := &corev1.PodList{}
			if err := k8s.List(t.Context(), pods, client.InNamespace(tc.ns), client.MatchingLabels{member.LabelCluster: name}); err != nil || len(pods.Items) > 0 {
				t.Fatalf("pods made: %v %d", err, len(pods.Items))
			}
		})
	}
}

// TestPreflightNeedsAgentImage: without a seed agent image nothing is touched.
func TestPreflightNeedsAgentImage(t *testing.T) {
	r := &Reconciler{}
	err := r.preflight(t.Context(), &etcdv1beta2.EtcdRestore{}, &etcdv1beta2.EtcdCluster{}, []string{"c-0"})
	re, ok := errors.AsType[*reason.Error](err)
	if !ok || re.Reason != etcdv1beta2.ReasonPreflightFailed || re.Transient || !strings.HasSuffix(re.Error(), "no cluster was changed") {
		t.Fatalf("got %v", err)
	}
}

// TestVersionOrder: the backup's etcd may be older than the cluster's, never of a newer minor.
func TestVersionOrder(t *testing.T) {
	for _, tc := range []struct {
		backup, cluster string
		newer, invalid  bool
	}{
		{"3.6.16", "3.5.21", true, false},
		{"3.5.21", "3.6.16", false, false},
		{"3.6.16", "v3.6.0", false, false},
		{"v3.6.1", "3.6.16", false, false},
		{"4.0.0", "3.6.16", true, false},
		// Was read as 0.0 (older than anything) and let through.
		{"3.6", "3.5.21", false, true},
		{"3.6.16", "latest", false, true},
	} {
		got, err := newerMinor(tc.backup, tc.cluster)
		if got != tc.newer || (err != nil) != tc.invalid {
			t.Errorf("newerMinor(%s, %s) = %v, %v; want %v, invalid %v", tc.backup, tc.cluster, got, err, tc.newer, tc.invalid)
		}
	}
}

// TestPreflightCountsEveryVolumeAgainstTheQuota: a 3-member cluster on volumes and a quota of 4
// volumes, 3 used. A dry run of one new volume fits; the restore needs 3 more at once while the
// old ones are kept. It is refused before anything is deleted, naming the quota.
func TestPreflightCountsEveryVolumeAgainstTheQuota(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	c := pvcClusterWithVolumes(t, ns, "prod", 3)
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "volumes"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: resource.MustParse("4")}},
	}
	create(t, q)
	// envtest runs no quota controller: record the usage it would.
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: resource.MustParse("3")}}
	if err := k8s.Status().Update(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	got := waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonPreflightFailed)
	for _, want := range []string{"ResourceQuota volumes has no room", "persistentvolumeclaims is 3 of 4 used", "needs 3 more", "no cluster was changed"} {
		if !strings.Contains(got.Status.Reason, want) {
			t.Errorf("reason %q lacks %q", got.Status.Reason, want)
		}
	}
	if now, err := getCluster(t, ns, "prod"); err != nil || now.UID != c.UID || now.DeletionTimestamp != nil {
		t.Fatalf("cluster changed: %v", err)
	}
}
