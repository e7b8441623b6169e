package etcdbackup

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	"github.com/etcd-operator/etcd-operator/internal/storage/storagetest"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/retention"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot/snapshottest"
)

func newBackup(ns, name string, endpoints []string, bucket *storagetest.Bucket, key, secret string) *etcdv1beta2.EtcdBackup {
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.BackupSpec{
			EtcdEndpoints: endpoints,
			StorageType:   bucket.Type,
			BackupSource:  bucket.Source(key, secret),
		},
	}
}

// objectSHA256 reads the object a backup's status points to and returns its sha256 and size.
func objectSHA256(t *testing.T, b *etcdv1beta2.EtcdBackup) (string, int64) {
	t.Helper()
	store, err := backuptarget.OpenStore(t.Context(), k8s, b.Namespace, &b.Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, _, key, ok := storage.ParseURL(b.Status.Location)
	if !ok {
		t.Fatalf("location %q does not parse", b.Status.Location)
	}
	return snapshottest.ObjectSHA256(t, store, key)
}

// TestOneShotBackup backs up a real etcd into MinIO, fake-gcs-server and Azurite; each backup
// completes with the stored object's sha256 and size in its status.
func TestOneShotBackup(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	snapshottest.Put(t, e.Client(t), "/k/", 200, 1024)
	for name, newBucket := range map[string]func(testing.TB) *storagetest.Bucket{
		"S3": storagetest.NewS3Bucket, "GCS": storagetest.NewGCSBucket, "ABS": storagetest.NewABSContainer,
	} {
		t.Run(name, func(t *testing.T) {
			ns := namespace(t)
			bucket := newBucket(t)
			createSecret(t, ns, "creds", bucket.Secret)
			create(t, newBackup(ns, "once", []string{e.Endpoint}, bucket, "etcd.backup", "creds"))
			b := waitPhase(t, ns, "once", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
			sum, size := objectSHA256(t, b)
			if sum != b.Status.SHA256 || size != b.Status.Size || size == 0 {
				t.Fatalf("object sha256/size %s/%d, status %s/%d", sum, size, b.Status.SHA256, b.Status.Size)
			}
			st := b.Status
			if want := string(bucket.Type) + "://" + bucket.Name + "/etcd.backup"; st.Location != want {
				t.Fatalf("location %q, want %q", st.Location, want)
			}
			if !st.Succeeded || st.EtcdRevision < 200 || st.EtcdVersion != "3.6.16" || st.Member != e.Endpoint ||
				st.LastSuccessDate == nil || st.StartTime == nil || st.CompletionTime == nil || st.Duration == nil ||
				st.ObservedGeneration != b.Generation ||
				!meta.IsStatusConditionTrue(st.Conditions, etcdv1beta2.BackupConditionComplete) ||
				!meta.IsStatusConditionFalse(st.Conditions, etcdv1beta2.BackupConditionFailed) {
				t.Fatalf("status incomplete: %+v", st)
			}
			// Checked against the live member right after the upload, in every store.
			kc := st.KeyspaceCheck
			if kc == nil {
				t.Fatalf("no status.keyspaceCheck: %+v", st)
			}
			if live := hashKV(t, e, kc.Revision); !kc.Checked || kc.Revision < st.EtcdRevision || kc.Hash != int64(live) {
				t.Fatalf("status.keyspaceCheck = %+v; want checked, at the snapshot's revision, hash %d", kc, live)
			}
			// Labelled with the EtcdBackup's name for etcdEndpoints, never with an endpoint.
			if v := gauge(t, "etcd_operator_backup_last_success_timestamp_seconds", b.Namespace, "once"); v != float64(st.LastSuccessDate.Unix()) {
				t.Fatalf("last success metric %v, want %d", v, st.LastSuccessDate.Unix())
			}
			// A finished one-shot backup is a record: it is not redone.
			testutil.Consistently(t, 2*time.Second, "the finished backup not redone", func() (bool, string) {
				again := &etcdv1beta2.EtcdBackup{}
				if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "once"}, again); err != nil {
					return false, err.Error()
				}
				return again.Status.CompletionTime.Equal(st.CompletionTime) && again.Status.Attempts == 1, fmt.Sprintf("%+v", again.Status)
			})
		})
	}
}

func failedReason(t *testing.T, b *etcdv1beta2.EtcdBackup) string {
	t.Helper()
	c := meta.FindStatusCondition(b.Status.Conditions, etcdv1beta2.BackupConditionFailed)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("no Failed=True condition: %+v", b.Status.Conditions)
	}
	return c.Reason
}

// TestFailures checks that each kind of failure ends Failed with its reason, without objects.
func TestFailures(t *testing.T) {
	e := snapshottest.StartEtcd(t, "")
	cases := []struct {
		name      string
		mutate    func(ns string, b *etcdv1beta2.EtcdBackup, bucket *storagetest.Bucket)
		reason    string
		attempts  int32
		noSecret  bool
		badSecret bool
		// service is created in the backup's namespace first.
		service *corev1.Service
	}{
		{name: "missing secret", noSecret: true, reason: etcdv1beta2.ReasonSecretNotFound, attempts: 1},
		{name: "wrong credentials", badSecret: true, reason: etcdv1beta2.ReasonInvalidCredentials, attempts: 1},
		{name: "unknown cluster", reason: etcdv1beta2.ReasonClusterNotFound, attempts: 1,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.EtcdEndpoints, b.Spec.EtcdCluster = nil, &etcdv1beta2.EtcdClusterRef{Name: "nope"}
			}},
		// Another namespace's cluster (before: backed up and stored in this namespace's bucket).
		{name: "another namespace's etcd", reason: etcdv1beta2.ReasonEndpointNotAllowed, attempts: 1,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.EtcdEndpoints = []string{"http://db-client.kube-system.svc:2379"}
			}},
		// A Service of the namespace that leads elsewhere (issue 30; before: dialed through DNS).
		{name: "ExternalName alias of another namespace's Service", reason: etcdv1beta2.ReasonEndpointNotAllowed, attempts: 1,
			service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "alias"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db-client.tenant-a.svc.cluster.local"}},
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.EtcdEndpoints = []string{"http://alias:2379"}
			}},
		{name: "Service without a selector", reason: etcdv1beta2.ReasonEndpointNotAllowed, attempts: 1,
			service: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "handmade"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 2379}}}},
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.EtcdEndpoints = []string{"http://handmade:2379"}
			}},
		{name: "unreachable etcd", reason: etcdv1beta2.ReasonEtcdUnreachable, attempts: MaxAttempts,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.EtcdEndpoints = []string{"http://127.0.0.1:1"}
			}},
		{name: "unreachable store", reason: etcdv1beta2.ReasonStorageUnreachable, attempts: MaxAttempts,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.S3.Endpoint = "http://127.0.0.1:1"
			}},
		// No credentials Secret: the operator's own cloud identity is off (no --ambient-credentials)
		// and never goes to an endpoint a spec names; before, the SDK's default chain was used.
		{name: "no secret, ambient identity off", reason: etcdv1beta2.ReasonAmbientCredentialsDenied, attempts: 1,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.S3.AWSSecret, b.Spec.S3.Endpoint = "", ""
			}},
		{name: "no secret, custom endpoint", reason: etcdv1beta2.ReasonAmbientCredentialsDenied, attempts: 1,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, _ *storagetest.Bucket) {
				b.Spec.S3.AWSSecret = ""
			}},
		{name: "missing bucket", reason: etcdv1beta2.ReasonStorageUnreachable, attempts: MaxAttempts,
			mutate: func(_ string, b *etcdv1beta2.EtcdBackup, bucket *storagetest.Bucket) {
				b.Spec.S3.Path = bucket.Name + "-missing/etcd.backup"
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			bucket := storagetest.NewS3Bucket(t)
			switch {
			case tc.badSecret:
				bad := map[string][]byte{"credentials": []byte("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong-secret\n"), "config": bucket.Secret["config"]}
				createSecret(t, ns, "creds", bad)
			case !tc.noSecret:
				createSecret(t, ns, "creds", bucket.Secret)
			}
			if tc.service != nil {
				tc.service.Namespace = ns
				create(t, tc.service)
			}
			b := newBackup(ns, "fail", []string{e.Endpoint}, bucket, "etcd.backup", "creds")
			if tc.mutate != nil {
				tc.mutate(ns, b, bucket)
			}
			create(t, b)
			b = waitPhase(t, ns, "fail", etcdv1beta2.BackupPhaseFailed, 60*time.Second)
			if got := failedReason(t, b); got != tc.reason || b.Status.Attempts != tc.attempts || b.Status.Succeeded || b.Status.Reason == "" {
				t.Fatalf("reason %s attempts %d, want %s after %d; status %+v", got, b.Status.Attempts, tc.reason, tc.attempts, b.Status)
			}
		})
	}
}

// TestPeriodicBackup runs the coreos periodic form (backupIntervalInSecond, maxBackups 2) while
// the revision crosses 99 -> 100 and 999 -> 1000: retention keeps the two newest backups by
// parsed time and revision and the status follows the newest.
func TestPeriodicBackup(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/a/", 96, 16) // revision 97
	ns := namespace(t)
	createSecret(t, ns, "aws", bucket.Secret)
	b := newBackup(ns, "periodic", []string{e.Endpoint}, bucket, "cluster/etcd.backup", "aws")
	b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 2}
	create(t, b)

	var revs []int64
	for _, writes := range []int{3, 2, 900, 5} { // revisions 100, 102, 1002, 1007
		var prev int64
		if len(revs) > 0 {
			prev = revs[len(revs)-1]
		}
		testutil.Eventually(t, 30*time.Second, "a periodic backup newer than the last", func() (bool, string) {
			if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "periodic"}, b); err != nil {
				return false, err.Error()
			}
			return b.Status.Succeeded && b.Status.EtcdRevision > prev, b.Status.Reason
		})
		revs = append(revs, b.Status.EtcdRevision)
		snapshottest.Put(t, cli, fmt.Sprintf("/w%d/", len(revs)), writes, 16)
	}
	// Wait for a backup at the final revision, then check the bucket.
	testutil.Eventually(t, 30*time.Second, "a backup at revision 1007", func() (bool, string) {
		_ = k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "periodic"}, b)
		return b.Status.EtcdRevision == 1007, fmt.Sprint(b.Status.EtcdRevision)
	})
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, &b.Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Rounds go on while we look: the newest object must be the one the status names after the
	// listing (a round between reading the status and listing would otherwise look like a
	// wrong choice).
	var kept []retention.Backup
	testutil.Eventually(t, 10*time.Second, "retention to keep 2 backups, the newest in status", func() (bool, string) {
		infos, err := store.List(t.Context(), "cluster/")
		if err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "periodic"}, b); err != nil {
			return false, err.Error()
		}
		kept = retention.Parse("cluster/etcd.backup", infos)
		_, _, newestKey, _ := storage.ParseURL(b.Status.Location)
		return len(kept) == 2 && len(infos) == 2 && kept[0].Key == newestKey, fmt.Sprint(infos, " status ", b.Status.Location)
	})
	// The second kept backup is at least as new as the third one seen: a round may land in the
	// middle of the 900 writes (revs[2] is then between 102 and 1002), never an older one.
	if kept[0].Revision != 1007 || kept[1].Revision < revs[2] {
		t.Fatalf("kept %+v, status location %s, revisions seen %v", kept, b.Status.Location, revs)
	}
	t.Logf("revisions seen: %v; kept %s and %s", revs, kept[0].Key, kept[1].Key)
}

// gauge returns the value of a metric of the controller-runtime registry for a namespace.
func gauge(t *testing.T, name, ns, cluster string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cluster_namespace"] == ns && labels["cluster"] == cluster {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s{cluster_namespace=%q, cluster=%q} not found", name, ns, cluster)
	return 0
}

// TestOneShotBackupClientTLS backs up an etcd that requires client certificates, with
// clientTLSSecret in the coreos format.
func TestOneShotBackupClientTLS(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	certs := snapshottest.NewCerts(t)
	e := snapshottest.StartEtcdTLS(t, certs)
	ns := namespace(t)
	createSecret(t, ns, "creds", bucket.Secret)
	createSecret(t, ns, "etcd-client", certs.SecretData())
	b := newBackup(ns, "tls", []string{e.Endpoint}, bucket, "etcd.backup", "creds")
	b.Spec.ClientTLSSecret = "etcd-client"
	create(t, b)
	b = waitPhase(t, ns, "tls", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
	if sum, _ := objectSHA256(t, b); sum != b.Status.SHA256 {
		t.Fatalf("object sha256 %s, status %s", sum, b.Status.SHA256)
	}
}

// TestOneShotBackupAuth backs up an etcd with authentication on, with the root user's
// credentials from auth.secretName; without them the backup fails with AuthFailed and writes nothing.
func TestOneShotBackupAuth(t *testing.T) {
	bucket := storagetest.NewS3Bucket(t) // first: without the object stores the test skips before starting etcd
	e := snapshottest.StartEtcd(t, "")
	cli := e.Client(t)
	snapshottest.Put(t, cli, "/k/", 20, 64)
	snapshottest.EnableAuth(t, cli, "s3cret")
	ns := namespace(t)
	createSecret(t, ns, "creds", bucket.Secret)
	createSecret(t, ns, "etcd-root", map[string][]byte{"username": []byte("root"), "password": []byte("s3cret")})

	refused := newBackup(ns, "anonymous", []string{e.Endpoint}, bucket, "anonymous.backup", "creds")
	create(t, refused)
	refused = waitPhase(t, ns, "anonymous", etcdv1beta2.BackupPhaseFailed, 60*time.Second)
	if got := failedReason(t, refused); got != etcdv1beta2.ReasonAuthFailed || refused.Status.Attempts != 1 {
		t.Fatalf("without credentials: Failed reason %s after %d attempts, want %s after 1", got, refused.Status.Attempts, etcdv1beta2.ReasonAuthFailed)
	}
	store, err := backuptarget.OpenStore(t.Context(), k8s, ns, &refused.Spec, storage.AmbientPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if objs, err := store.List(t.Context(), ""); err != nil || len(objs) != 0 {
		t.Fatalf("objects after a refused backup: %v, %v", objs, err)
	}

	b := newBackup(ns, "auth", []string{e.Endpoint}, bucket, "etcd.backup", "creds")
	b.Spec.Auth = &etcdv1beta2.AuthPolicy{SecretName: "etcd-root"}
	create(t, b)
	b = waitPhase(t, ns, "auth", etcdv1beta2.BackupPhaseCompleted, 60*time.Second)
	if sum, _ := objectSHA256(t, b); sum != b.Status.SHA256 {
		t.Fatalf("object sha256 %s, status %s", sum, b.Status.SHA256)
	}
}

// hashKV is the live member's HashKV at rev.
func hashKV(t *testing.T, e *snapshottest.Etcd, rev int64) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := e.Client(t).HashKV(ctx, e.Endpoint, rev)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Hash
}
