package etcdrestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/restoreboot"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// store is a MinIO bucket holding one real etcd snapshot under "etcd.backup", plus a flipped,
// a truncated copy, and the credentials Secret in ns.
type store struct {
	bucket *storagetest.Bucket
	b      backend.Backend
	backup snapshot.Result
}

func newStore(t *testing.T, ns string) *store {
	t.Helper()
	bk := storagetest.NewS3Bucket(t)
	b := bk.S3Backend(t)
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "k", 200, 64)
	res, err := snapshot.Take(t.Context(), &snapshot.Config{
		Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
		Key: func(int64, time.Time) string { return "etcd.backup" },
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := b.Get(t.Context(), "etcd.backup")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	flipped := bytes.Clone(data)
	flipped[len(flipped)/3] ^= 0x01
	for key, val := range map[string][]byte{"flipped.backup": flipped, "truncated.backup": data[:len(data)-100]} {
		if err := b.Put(t.Context(), key, bytes.NewReader(val)); err != nil {
			t.Fatal(err)
		}
	}
	create(t, secret(ns, "aws", bk.Secret))
	return &store{bucket: bk, b: b, backup: res}
}

// restore is the coreos-shaped EtcdRestore of key into cluster.
func (s *store) restore(ns, name, cluster, key string) *etcdv1beta2.EtcdRestore {
	return &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.RestoreSpec{
			EtcdCluster:       etcdv1beta2.EtcdClusterRef{Name: cluster},
			BackupStorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource:      s.bucket.Source(key, "aws"),
		},
	}
}

func cluster(ns, name string, size int32) *etcdv1beta2.EtcdCluster {
	return &etcdv1beta2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec:       etcdv1beta2.ClusterSpec{Size: size, Version: "3.6.16"},
	}
}

// TestBadBackupLeavesClusterUntouched: a corrupted, truncated or missing object fails the
// restore with its reason before anything happens to the cluster it names.
func TestBadBackupLeavesClusterUntouched(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	c := cluster(ns, "prod", 3)
	create(t, c)
	for _, tc := range []struct{ name, key, reason string }{
		{"flipped", "flipped.backup", etcdv1beta2.ReasonBackupCorrupt},
		{"truncated", "truncated.backup", etcdv1beta2.ReasonBackupCorrupt},
		{"missing", "missing.backup", etcdv1beta2.ReasonBackupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			create(t, s.restore(ns, tc.name, "prod", tc.key))
			rs := waitCondition(t, ns, tc.name, etcdv1beta2.RestoreConditionFailed, "True/"+tc.reason)
			if rs.Status.Phase != etcdv1beta2.RestorePhaseFailed || rs.Status.Succeeded || !strings.Contains(rs.Status.Reason, "no cluster was changed") {
				t.Errorf("status %+v", rs.Status)
			}
			if v := findCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionBackupVerified); v == nil || v.Status != metav1.ConditionFalse {
				t.Errorf("BackupVerified = %+v, want False", v)
			}
			got, err := getCluster(t, ns, "prod")
			if err != nil || got.UID != c.UID || got.DeletionTimestamp != nil || got.Spec.Bootstrap != nil {
				t.Fatalf("cluster touched: %v %+v", err, got.ObjectMeta)
			}
			pods := &corev1.PodList{}
			if err := k8s.List(t.Context(), pods); err != nil || len(podsIn(pods, ns)) > 0 {
				t.Fatalf("pods created: %v %v", err, podsIn(pods, ns))
			}
		})
	}
}

func podsIn(l *corev1.PodList, ns string) []string {
	var out []string
	for _, p := range l.Items {
		if p.Namespace == ns {
			out = append(out, p.Name)
		}
	}
	return out
}

// TestReplaceSeedGrowVerify walks an in-place restore through every step: the old cluster is
// deleted only after the backup checked out, the new one copies its spec with the restore
// bootstrap whose source is exactly the verified object, the restore creates no pod, and
// success needs every member to match the restored keyspace.
func TestReplaceSeedGrowVerify(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	old := cluster(ns, "prod", 3)
	create(t, old)
	create(t, s.restore(ns, "prod", "prod", "etcd.backup"))
	const rev, hash = 201, 12345
	result := fmt.Sprintf(`{"outcome":"Restored","revision":%d,"hashKV":%d,"keys":200,"size":%d}`, rev, hash, s.backup.Size)
	checkPasses(t, ns, "prod", result)

	// The old cluster is deleted in the foreground (envtest has no garbage collector: the
	// helper plays it), and the new one carries the verified backup as its source.
	c := waitRestoring(t, ns, "prod", old.UID)
	rs := getRestore(t, ns, "prod")
	if _, ok := rs.Annotations[AnnotationClusterTemplate]; !ok {
		t.Error("template not saved before the cluster was deleted")
	}
	if pin := rs.Status.Source; pin == nil || !equality.Semantic.DeepEqual(pin, c.Spec.Bootstrap.Restore.Source) {
		t.Errorf("verified backup pinned in status.source as %+v, the cluster restores %+v", pin, c.Spec.Bootstrap.Restore.Source)
	}
	if _, ok := rs.Annotations[AnnotationBackupSource]; ok {
		t.Error("the location went through an annotation")
	}
	if c.Spec.Size != 3 || c.Labels["team"] != "a" || c.Spec.Bootstrap.Restore.RestoreName != "prod" || c.Spec.Bootstrap.Restore.SeedMember != "prod-0" {
		t.Fatalf("new cluster %+v labels %v", c.Spec, c.Labels)
	}
	src := c.Spec.Bootstrap.Restore.Source
	if loc, err := storage.FromSource(src.StorageType, src.BackupSource); err != nil || loc.Bucket != s.bucket.Name || loc.Key != "etcd.backup" || loc.Secret != "aws" ||
		src.SHA256 != s.backup.SHA256 || src.Size != s.backup.Size || src.RevisionBump != nil {
		t.Fatalf("bootstrap.restore.source %+v (%v), want the verified backup", src, err)
	}
	// No pod but the check's, which the test made as the Job controller (envtest has no
	// garbage collector to delete it with its Job).
	pods := &corev1.PodList{}
	if err := k8s.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		ref := metav1.GetControllerOf(&p)
		return ref != nil && ref.Kind == "Job" && p.Labels[LabelRestore] == "prod"
	})
	if len(pods.Items) != 0 {
		t.Fatalf("pods %v: members are the etcd operator's", podsIn(pods, ns))
	}

	// The etcd operator's part: every member restored and verified.
	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: rev, Hash: hash, Keys: 200, BackupRevision: rev})
	rs = waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	if rs.Status.Verification == nil || rs.Status.Verification.Keys != 200 || rs.Status.Verification.SnapshotHash != hash {
		t.Fatalf("verification after seeding: %+v", rs.Status.Verification)
	}
	c, _ = getCluster(t, ns, "prod")

	// The etcd operator's part: the cluster grows; one member is not there yet, then all are.
	members.set(member.Host(c, "prod-1"), restoreboot.MemberState{Hash: hash, Keys: 200, Revision: rev + 5})
	members.set(member.Host(c, "prod-2"), restoreboot.MemberState{Hash: hash, Keys: 200, Revision: rev + 5})
	grown(t, c, "prod-0", "prod-1")
	// The restore has seen the grown cluster (its message counts 2 of 3) and does not succeed.
	testutil.Eventually(t, testutil.Timeout, "restore waiting on the third member", func() (bool, string) {
		rs := getRestore(t, ns, "prod")
		if rs.Status.Succeeded {
			t.Fatal("succeeded with 2 of 3 members ready")
		}
		c := meta.FindStatusCondition(rs.Status.Conditions, etcdv1beta2.RestoreConditionComplete)
		return c != nil && strings.Contains(c.Message, "2 of 3 members ready"), fmt.Sprintf("%+v", c)
	})
	c, _ = getCluster(t, ns, "prod")
	grown(t, c, "prod-0", "prod-1", "prod-2")
	rs = waitCondition(t, ns, "prod", etcdv1beta2.RestoreConditionComplete, "True/"+etcdv1beta2.ReasonRestoreSucceeded)
	v := rs.Status.Verification
	if !rs.Status.Succeeded || !v.Passed || v.MembersVerified != 3 || rs.Status.RestoredRevision != rev+5 || rs.Status.Duration == nil || rs.Status.BackupSHA256 != s.backup.SHA256 {
		t.Fatalf("status %+v verification %+v", rs.Status, v)
	}
}

// TestMemberMismatchFails: a member whose keyspace differs from the seed's fails the restore.
func TestMemberMismatchFails(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 3))
	rs := s.restore(ns, "drill", "scratch", "etcd.backup")
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	rs.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	create(t, rs)
	c := waitRestoring(t, ns, "scratch", "")
	if c.Labels["team"] != "" {
		t.Fatalf("scratch cluster labels %v: a drill must not copy the template's labels", c.Labels)
	}
	if refs := c.OwnerReferences; len(refs) != 1 || refs[0].Name != "drill" || refs[0].Controller != nil {
		t.Errorf("a drill's scratch cluster is owned by its EtcdRestore (not as controller): %+v", refs)
	}
	restoredBy(t, c, etcdv1beta2.ClusterRestoreStatus{Revision: 9, Hash: 7, Keys: 3})
	// By the time the restore checks every member, scratch-1 serves another keyspace.
	members.set(member.Host(c, "scratch-1"), restoreboot.MemberState{Hash: 8, Keys: 3, Revision: 9})
	waitCondition(t, ns, "drill", etcdv1beta2.RestoreConditionSeeded, "True/"+reasonSeedReady)
	c, _ = getCluster(t, ns, "scratch")
	grown(t, c, "scratch-0", "scratch-1", "scratch-2")
	got := waitCondition(t, ns, "drill", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonVerificationFailed)
	if !strings.Contains(got.Status.Reason, "scratch-1") {
		t.Errorf("reason %q does not name the member", got.Status.Reason)
	}
	// The TTL then deletes the scratch cluster, and only it.
	testutil.Eventually(t, testutil.Timeout, "scratch cluster deleted", func() (bool, string) {
		c, err := getCluster(t, ns, "scratch")
		return err != nil || c.DeletionTimestamp != nil, "still there"
	})
	if _, err := getCluster(t, ns, "tmpl"); err != nil {
		t.Fatalf("template cluster: %v", err)
	}
}

// TestDrillNeverReplaces: a restore with clusterTemplate into a name that exists fails and
// leaves that cluster alone; a cluster the etcd operator could not restore fails the restore
// with its reason.
func TestDrillNeverReplaces(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	create(t, cluster(ns, "tmpl", 1))
	existing := cluster(ns, "taken", 1)
	create(t, existing)
	rs := s.restore(ns, "drill", "taken", "etcd.backup")
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	create(t, rs)
	waitCondition(t, ns, "drill", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonClusterExists)
	if c, err := getCluster(t, ns, "taken"); err != nil || c.UID != existing.UID || c.DeletionTimestamp != nil {
		t.Fatalf("existing cluster touched: %v", err)
	}

	// Members that run out of space: Failed with that reason.
	rs2 := s.restore(ns, "nospace", "fresh", "etcd.backup")
	rs2.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	create(t, rs2)
	restoreFailedIn(t, waitRestoring(t, ns, "fresh", ""), etcdv1beta2.ReasonInsufficientStorage, "member fresh-0 could not restore the backup: the data volume has 10 MiB free")
	got := waitCondition(t, ns, "nospace", etcdv1beta2.RestoreConditionFailed, "True/"+etcdv1beta2.ReasonInsufficientStorage)
	if !strings.Contains(got.Status.Reason, "10 MiB free") || !strings.Contains(got.Status.Reason, "create a new EtcdRestore") {
		t.Errorf("reason %q", got.Status.Reason)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNewNameGetsItsOwnCertificates: a restore into a new name of a cluster with static TLS makes
// a cluster with TLS.auto: the template's certificates name the template's members, so the new
// cluster's certificates are made for its own names by the etcd operator.
func TestNewNameGetsItsOwnCertificates(t *testing.T) {
	ns := namespace(t)
	s := newStore(t, ns)
	tmpl := cluster(ns, "tmpl", 1)
	tmpl.Spec.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: "tmpl-peer"}}}
	create(t, tmpl)
	rs := s.restore(ns, "copy", "copy", "etcd.backup")
	rs.Spec.ClusterTemplate = &etcdv1beta2.EtcdClusterRef{Name: "tmpl"}
	create(t, rs)
	testutil.Eventually(t, testutil.Timeout, "cluster copy", func() (bool, string) {
		c, err := getCluster(t, ns, "copy")
		if err != nil {
			return false, err.Error()
		}
		return c.Spec.TLS != nil && c.Spec.TLS.Auto != nil && c.Spec.TLS.Static == nil, fmt.Sprintf("TLS %+v", c.Spec.TLS)
	})
}
