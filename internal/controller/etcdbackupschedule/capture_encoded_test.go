package etcdbackupschedule

import (
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/codec"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

// TestEncodedCapture: a schedule whose template compresses and encrypts stores its full
// backup and every segment as zstd+age objects (nothing in the clear in the bucket), and the
// capture read back through the store holds every revision once, also after a stop and resume.
func TestEncodedCapture(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	ns := namespace(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string][]byte{"aws": bucket.Secret, "age-keys": {"identity": []byte(id.String())}} {
		if err := k8s.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	snapshottest.Put(t, cli, "/before/", 20, 32)
	s := newSchedule(ns, "enc", "0 * * * *", []string{e.Endpoint}, bucket, "aws")
	s.Spec.BackupTemplate.Spec.Compression = etcdv1beta2.CompressionZstd
	s.Spec.BackupTemplate.Spec.Encryption = &etcdv1beta2.BackupEncryption{SecretName: "age-keys"}
	s.Spec.ContinuousCapture = &etcdv1beta2.ContinuousCaptureSpec{SegmentIntervalSeconds: ptr.To[int32](1)}
	createSchedule(t, s)

	store, err := (&Reconciler{Client: k8s, Options: options.New("backup-operator")}).openTemplateStore(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sid := snapshot.Identity{Namespace: ns, Cluster: snapshot.UnknownCluster, ClusterID: clusterIDOf(t, cli, e.Endpoint)}
	first := waitCapturing(t, ns, "enc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.StartRevision > 0 })
	start := first.Status.Capture.StartRevision

	snapshottest.Put(t, cli, "/during/", 200, 32)
	top := revisionOf(t, cli)
	waitCapturing(t, ns, "enc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.CapturedRevision >= top })
	suspendCapture(t, ns, "enc")
	snapshottest.Put(t, cli, "/suspended/", 50, 32)
	updateSchedule(t, ns, "enc", func(s *etcdv1beta2.EtcdBackupSchedule) { s.Spec.Suspend = ptr.To(false) })
	top = revisionOf(t, cli)
	waitCapturing(t, ns, "enc", func(cs *etcdv1beta2.CaptureStatus) bool { return cs.CapturedRevision >= top })
	checkCapture(t, store, store.Key, sid, start, top)

	// As stored: every object an age file, no key in the clear.
	raw := bucket.S3Backend(t)
	objs, err := raw.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	segments := 0
	for _, o := range objs {
		rc, err := raw.Get(t.Context(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if f := codec.Sniff(data); !f.Encrypted || strings.Contains(string(data), "/during/") {
			t.Fatalf("%s is stored as %s, or holds a key in the clear", o.Key, f)
		}
		if strings.HasSuffix(o.Key, ".seg") {
			segments++
		}
	}
	if segments < 2 || len(objs) <= segments {
		t.Fatalf("%d objects, %d of them segments: want the backup and segments of both runs", len(objs), segments)
	}
	t.Logf("%d encrypted objects, %d segments, revisions %d-%d captured once", len(objs), segments, start, top)
}
