package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// hotLoopNamespaces are TestNoHotLoops' namespaces in round round of a `go test -count=N` run,
// one per operator binary: names known in advance, so that the cluster-wide operators of the
// test running beside it in the same round can exclude them, and new each round (envtest never
// finishes deleting a namespace, so a name cannot be used twice). Each of the two tests counts
// its own rounds (hotLoopRuns, memoryRuns); go test runs the whole list once per round.
func hotLoopNamespaces(round int32) map[string]string {
	names := map[string]string{}
	for _, b := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		names[b] = fmt.Sprintf("hotloop-%s-%d", b, round)
	}
	return names
}

var hotLoopRuns, memoryRuns atomic.Int32

// Bounds of TestNoHotLoops.
const (
	// hotLoopWindow is how long reconciles are counted once every object reports its failure.
	hotLoopWindow = 40 * time.Second
	// maxReconcilesPerObject is the most reconciles one object may take, on average over the
	// objects of its kind, in hotLoopWindow. The window starts once every object reported its
	// failure (10 s and more after its first pass): controller-runtime's per-object backoff
	// (5 ms, doubling) is then past 5 s, which allows about 5 retries in 40 s; the operators'
	// RequeueAfter constants are 10 s and more (4 passes); a status change that wakes the object
	// adds one or two. Measured: 8 per cluster, at most 1 for the other kinds. A requeue at once
	// is thousands; a RequeueAfter of one second is 40, which the average over N objects of a
	// kind shows as 40/N (N is 2 to 4 here, so at least 10 against a bound of 12).
	maxReconcilesPerObject = 12
)

// TestNoHotLoops (issue 14 item 8) drives every kind through its permanent failures against the
// real binaries: a missing Secret, a Secret with the wrong keys, an unreachable etcd, an
// unreachable store, a cluster that does not exist, a cron that never fires, a missing backup, a
// cluster whose pods never start (envtest has no kubelet) and one whose TLS Secrets are missing. Each object must
// say why in a condition, the reconciles of each controller (controller_runtime_reconcile_total)
// must stay within maxReconcilesPerObject per object over hotLoopWindow, and nothing that was in
// the namespaces before (a Secret, a ConfigMap, a Service, a PVC) may be deleted or changed.
//
// It runs beside TestMemoryDoesNotGrowWithUnrelatedObjects (both mostly wait: the window here,
// the settling of memory there), whose cluster-wide operators leave hotLoopNamespaces alone.
func TestNoHotLoops(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	closed := freePort(t) // nothing listens here: an unreachable etcd and store
	ns := map[string]string{}
	names := hotLoopNamespaces(hotLoopRuns.Add(1))
	for _, b := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[b]}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		ns[b] = n.Name
	}
	bystanders := map[string][]client.Object{}
	for b, n := range ns {
		bystanders[b] = createBystanders(t, n)
	}

	// backup-operator: EtcdBackups and EtcdBackupSchedules that cannot succeed.
	nb := ns["backup-operator"]
	create(t, secret(nb, "aws", map[string]string{etcdv1beta2.AWSSecretCredentialsFileName: "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = example\n"}))
	create(t, secret(nb, "wrong-keys", map[string]string{"password": "x"}))
	endpoints := []string{"http://" + closed}
	s3 := func(secret, endpoint string) etcdv1beta2.BackupSource {
		return etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/etcd.backup", AWSSecret: secret, Endpoint: endpoint, ForcePathStyle: true}}
	}
	periodic := &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 30}
	backups := []*etcdv1beta2.EtcdBackup{
		{ObjectMeta: metav1.ObjectMeta{Name: "missing-secret"}, Spec: etcdv1beta2.BackupSpec{EtcdEndpoints: endpoints, StorageType: "S3", BackupSource: s3("nope", "http://"+closed)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wrong-keys"}, Spec: etcdv1beta2.BackupSpec{EtcdEndpoints: endpoints, StorageType: "S3", BackupSource: s3("wrong-keys", "http://"+closed)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unreachable"}, Spec: etcdv1beta2.BackupSpec{EtcdEndpoints: endpoints, StorageType: "S3", BackupSource: s3("aws", "http://"+closed), BackupPolicy: periodic}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-cluster"}, Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "ghost"}, StorageType: "S3", BackupSource: s3("aws", "http://"+closed), BackupPolicy: periodic}},
	}
	for _, b := range backups {
		b.Namespace = nb
		create(t, b)
	}
	template := etcdv1beta2.BackupTemplateSpec{Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "ghost"}, StorageType: "S3", BackupSource: s3("nope", "http://"+closed)}}
	schedules := []*etcdv1beta2.EtcdBackupSchedule{
		{ObjectMeta: metav1.ObjectMeta{Namespace: nb, Name: "never"}, Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "0 0 31 2 *", BackupTemplate: template}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: nb, Name: "missing-secret"}, Spec: etcdv1beta2.BackupScheduleSpec{Schedule: "* * * * *", BackupTemplate: template}},
	}
	for _, s := range schedules {
		create(t, s)
	}

	// restore-operator: EtcdRestores that cannot find or read their backup.
	nr := ns["restore-operator"]
	create(t, secret(nr, "aws", map[string]string{etcdv1beta2.AWSSecretCredentialsFileName: "[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = example\n"}))
	restores := []*etcdv1beta2.EtcdRestore{
		{ObjectMeta: metav1.ObjectMeta{Name: "missing-backup"}, Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "a"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "ghost"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "missing-secret"}, Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "b"}, BackupStorageType: "S3", BackupSource: s3("nope", "http://"+closed)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unreachable-store"}, Spec: etcdv1beta2.RestoreSpec{EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "c"}, BackupStorageType: "S3", BackupSource: s3("aws", "http://"+closed)}},
	}
	for _, r := range restores {
		r.Namespace = nr
		create(t, r)
	}

	// etcd-operator: a cluster whose pods never start, and one whose TLS Secrets do not exist.
	nc := ns["etcd-operator"]
	pending := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nc, Name: "pending"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	noTLS := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nc, Name: "no-tls"}, Spec: etcdv1beta2.ClusterSpec{Size: 3,
		TLS: &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{OperatorSecret: "missing-client",
			Member: &etcdv1beta2.MemberSecret{PeerSecret: "missing-peer", ServerSecret: "missing-server"}}}}}
	create(t, pending)
	create(t, noTLS)

	metrics := map[string]string{}
	for _, b := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		args := []string{"--watch-namespace=" + ns[b]}
		if b == "backup-operator" {
			args = append(args, "--allowed-etcd-endpoints="+closed)
		}
		metrics[b] = startOperator(t, b, kubeconfig, args...).metrics
	}

	// Every object says why.
	for _, b := range backups {
		waitReason(t, &etcdv1beta2.EtcdBackup{}, b.Namespace, b.Name, etcdv1beta2.ConditionReady)
	}
	for _, s := range schedules {
		waitReason(t, &etcdv1beta2.EtcdBackupSchedule{}, s.Namespace, s.Name, etcdv1beta2.ConditionReady)
	}
	for _, r := range restores {
		waitReason(t, &etcdv1beta2.EtcdRestore{}, r.Namespace, r.Name, etcdv1beta2.ConditionReady)
	}
	for _, c := range []string{"pending", "no-tls"} {
		waitReason(t, &etcdv1beta2.EtcdCluster{}, nc, c, etcdv1beta2.ConditionReady)
	}

	// Reconciles per object over the window.
	controllers := map[string]struct {
		binary  string
		objects int
	}{
		"etcdbackup":         {"backup-operator", len(backups)},
		"etcdbackupschedule": {"backup-operator", len(schedules)},
		"etcdrestore":        {"restore-operator", len(restores)},
		"etcdcluster":        {"etcd-operator", 2},
	}
	before := map[string]float64{}
	for name, c := range controllers {
		before[name] = reconciles(t, metrics[c.binary], name)
	}
	time.Sleep(hotLoopWindow) //nolint:forbidigo // the observation window: proves reconciles do NOT pile up, there is no state to wait for
	for name, c := range controllers {
		n := reconciles(t, metrics[c.binary], name) - before[name]
		perObject := n / float64(c.objects)
		t.Logf("%s: %.0f reconciles of %d objects in %s (%.1f per object)", name, n, c.objects, hotLoopWindow, perObject)
		if perObject > maxReconcilesPerObject {
			t.Errorf("%s: %.1f reconciles per object in %s, want at most %d: a hot loop", name, perObject, hotLoopWindow, maxReconcilesPerObject)
		}
	}

	// Nothing that was there before was deleted or changed.
	for b, objs := range bystanders {
		for _, o := range objs {
			got := o.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Errorf("%s's namespace: %T %s: %v", b, o, o.GetName(), err)
				continue
			}
			if got.GetUID() != o.GetUID() || got.GetResourceVersion() != o.GetResourceVersion() || got.GetDeletionTimestamp() != nil {
				t.Errorf("%s's namespace: %T %s was changed (uid %s -> %s, resourceVersion %s -> %s, deleting %v)", b, o, o.GetName(),
					o.GetUID(), got.GetUID(), o.GetResourceVersion(), got.GetResourceVersion(), got.GetDeletionTimestamp())
			}
		}
	}
}

// createBystanders creates objects the operators have no business with.
func createBystanders(t *testing.T, ns string) []client.Object {
	t.Helper()
	objs := []client.Object{
		secret(ns, "unrelated", map[string]string{"k": "v"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}, Data: map[string]string{"k": "v"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
	}
	for _, o := range objs {
		create(t, o)
	}
	return objs
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

func create(t *testing.T, o client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

func waitFor(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, last)
	}
}

// waitReason waits until obj's condition typ is False with a reason other than the neutral ones.
func waitReason(t *testing.T, obj client.Object, ns, name, typ string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%T %s/%s to say why in %s", obj, ns, name, typ), func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		c := meta.FindStatusCondition(conditionsOf(obj), typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason == "" || c.Message == "" {
			return fmt.Errorf("%s: %+v", typ, c)
		}
		return nil
	})
}

func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *etcdv1beta2.EtcdBackup:
		return o.Status.Conditions
	case *etcdv1beta2.EtcdBackupSchedule:
		return o.Status.Conditions
	case *etcdv1beta2.EtcdRestore:
		return o.Status.Conditions
	case *etcdv1beta2.EtcdCluster:
		return o.Status.Conditions
	}
	return nil
}

// reconciles is controller_runtime_reconcile_total of controller summed over its results.
func reconciles(t *testing.T, metricsAddr, controller string) float64 {
	t.Helper()
	_, fams, err := scrape(t.Context(), "http://"+metricsAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, m := range fams["controller_runtime_reconcile_total"].GetMetric() {
		if labelOf(m, "controller") == controller {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
