//go:build e2e

package restore

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/member"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// memberURLs are the client URLs of c's member pods at their pod IPs. The host reaches pod IPs
// on the local cluster's bridge directly; a ClusterIP it reaches only once kube-proxy has
// programmed the Service, and a connection opened before that leaves the machine (and stays
// open to whatever answered: a CI run saw HTTP 404s for two minutes).
func memberURLs(t *testing.T, f *framework.Framework, c *etcdv1beta2.EtcdCluster) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := f.Client.List(t.Context(), pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			urls = append(urls, fmt.Sprintf("http://%s:%d", p.Status.PodIP, etcdv1beta2.EtcdClientPort))
		}
	}
	if len(urls) == 0 {
		t.Fatalf("no member pod of %s has an IP", c.Name)
	}
	return urls
}

// kubeAPIServer runs the kube-apiserver the local cluster is built with as a process on the
// host, storing its objects in the etcd members at urls, and returns a clientset of an admin.
func kubeAPIServer(t *testing.T, f *framework.Framework, urls []string) (*envtest.APIServer, kubernetes.Interface) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(f.KubectlPath), "kube-apiserver")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no kube-apiserver next to %s (hack/build-k8s.sh builds it with the local cluster): %v", f.KubectlPath, err)
	}
	u, err := url.Parse(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "kube-apiserver.log")
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close() })
	// A cold API server spends tens of CPU-seconds building its OpenAPI documents: on 2 cores
	// shared with the rest of the e2e suite that can take minutes.
	api := &envtest.APIServer{Path: bin, EtcdURL: u, StartTimeout: 4 * time.Minute, StopTimeout: time.Minute, Out: out, Err: out}
	api.Configure().Set("etcd-servers", strings.Join(urls, ","))
	start := time.Now()
	if err := api.Start(); err != nil {
		log, _ := os.ReadFile(logFile)
		if len(log) > 4000 {
			log = log[len(log)-4000:]
		}
		t.Fatalf("starting kube-apiserver on %v: %v; the end of its log:\n%s", urls, err, log)
	}
	t.Logf("MEASURE kube-apiserver healthy on the EtcdCluster: %s", time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() { _ = api.Stop() })
	cfg, err := api.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.CAData, cfg.Host = api.CA, api.SecureServing.URL("https", "/").String()
	cfg.Timeout = 20 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return api, cs
}

// TestKubernetesEtcd is issue 35's reproduction: a kube-apiserver keeps its objects in an
// operator-managed 3-member EtcdCluster; 300 ConfigMaps and 50 Events (on the API server's event
// lease) are written, a backup is taken, 100 more ConfigMaps are written, every member is lost,
// and the coreos-shaped in-place EtcdRestore brings the cluster back. A restarted API server
// then serves exactly the backup's objects and takes writes. Before issue 35 the restore failed
// ("etcdutl hashkv ... panic: no lessor to attach lease") after deleting the cluster.
func TestKubernetesEtcd(t *testing.T) {
	t.Parallel()
	f := framework.Global(t)
	stores := framework.ObjectStores(t)
	ns := f.CreateNamespace(t, "kube-etcd")
	ctx := t.Context()

	c := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube"}, Spec: etcdv1beta2.ClusterSpec{Size: 3}}
	f.Create(t, c)
	f.WaitClusterAvailable(t, ns, "kube", 3, 5*time.Minute)
	// In a real control plane the API server reaches its etcd through a Service of its own
	// (docs/runbooks/kubernetes-etcd.md); this one runs on the host, which reaches the members
	// at their pod IPs (memberURLs).
	urls := memberURLs(t, f, c)
	api, kube := kubeAPIServer(t, f, urls)

	apps := "apps"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apps}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apps}, Data: map[string]string{"owner": name, "blob": strings.Repeat(name, 20)}}
	}
	var want []string
	for i := range 300 {
		name := fmt.Sprintf("cm-%03d", i)
		if _, err := kube.CoreV1().ConfigMaps(apps).Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	for i := range 50 {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("ev-%02d", i), Namespace: apps},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: apps, Name: want[i]},
			Reason:         "Written", Message: "by the e2e test", Type: corev1.EventTypeNormal,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}
		if _, err := kube.CoreV1().Events(apps).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server attached the events to a lease: the keyspace issue 35 could not restore.
	cli := f.EtcdClient(t, urls...)
	evs, err := cli.Get(ctx, "/registry/events/"+apps+"/", clientv3.WithPrefix())
	if err != nil || len(evs.Kvs) != 50 || evs.Kvs[0].Lease == 0 {
		t.Fatalf("events in etcd: %v, %d keys, want 50 on a lease", err, len(evs.Kvs))
	}

	bucket := stores.NewBucket(t, etcdv1beta2.BackupStorageTypeS3)
	bucket.CreateSecret(t, f, ns, "aws")
	f.Create(t, &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-backup"},
		Spec: etcdv1beta2.BackupSpec{EtcdCluster: &etcdv1beta2.EtcdClusterRef{Name: "kube"}, StorageType: etcdv1beta2.BackupStorageTypeS3,
			BackupSource: bucket.Source("kube/etcd.backup", "aws")},
	})
	backup := f.WaitBackupCompleted(t, ns, "kube-backup", 3*time.Minute)
	t.Logf("backup: %d bytes at revision %d", backup.Status.Size, backup.Status.EtcdRevision)
	for i := range 100 {
		if _, err := kube.CoreV1().ConfigMaps(apps).Create(ctx, configMap(fmt.Sprintf("late-%03d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	late, err := kube.CoreV1().ConfigMaps(apps).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lateRV := late.ResourceVersion // what a watcher had seen when the disaster struck

	// Every member is lost (emptyDir: the data goes with the pods).
	pods := &corev1.PodList{}
	if err := f.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(member.SelectorLabels(c))); err != nil || len(pods.Items) != 3 {
		t.Fatalf("member pods: %v %d", err, len(pods.Items))
	}
	for i := range pods.Items {
		if err := f.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	f.Create(t, coreosRestore(ns, "kube", "kube", bucket.Source("kube/etcd.backup", "aws")))
	rs := f.WaitRestoreSucceeded(t, ns, "kube", 8*time.Minute)
	t.Logf("restored in %s: verification %+v", rs.Status.Duration.Duration, *rs.Status.Verification)
	f.WaitClusterAvailable(t, ns, "kube", 3, 2*time.Minute)

	// The API server restarts on the restored etcd (docs/runbooks/kubernetes-etcd.md: its cache
	// is ahead of the restored revision).
	if err := api.Stop(); err != nil {
		t.Fatal(err)
	}
	_, kube = kubeAPIServer(t, f, memberURLs(t, f, c))
	var got []string
	framework.Eventually(t, 2*time.Minute, "the restored API server lists the backup's ConfigMaps", func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().ConfigMaps(apps).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = got[:0]
		for _, cm := range list.Items {
			if cm.Name == "kube-root-ca.crt" { // the API server's own, not restored data
				continue
			}
			if cm.Data["owner"] != cm.Name || cm.Data["blob"] != strings.Repeat(cm.Name, 20) {
				return false, fmt.Errorf("ConfigMap %s restored with data %v", cm.Name, cm.Data)
			}
			got = append(got, cm.Name)
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Errorf("%d ConfigMaps, want the backup's %d", len(got), len(want))
	})
	// A watcher that resumes from what it saw before the disaster is told to list again (410
	// Gone): the restore raised the revision above anything it saw (revisionBump), so it neither
	// waits for revisions it already saw nor misses the restored state.
	if rs.Status.Verification.Revision <= backup.Status.EtcdRevision {
		t.Fatalf("restored at revision %d, not above the backup's %d", rs.Status.Verification.Revision, backup.Status.EtcdRevision)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	w, err := kube.CoreV1().ConfigMaps(apps).Watch(wctx, metav1.ListOptions{ResourceVersion: lateRV})
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
	case err != nil:
		t.Fatalf("watch from resourceVersion %s: %v, want 410 Gone", lateRV, err)
	default:
		ev, ok := <-w.ResultChan()
		w.Stop()
		st, isStatus := ev.Object.(*metav1.Status)
		if !ok || ev.Type != watch.Error || !isStatus || st.Code != http.StatusGone {
			t.Fatalf("watch from resourceVersion %s: first event %v %+v, want an error 410 Gone", lateRV, ev.Type, ev.Object)
		}
	}
	wcancel()
	t.Logf("a watch from the pre-disaster resourceVersion %s gets 410 Gone (restored at revision %d, backup %d)", lateRV, rs.Status.Verification.Revision, backup.Status.EtcdRevision)
	events, err := kube.CoreV1().Events(apps).List(ctx, metav1.ListOptions{})
	if err != nil || len(events.Items) != 50 {
		t.Fatalf("restored events: %v, %d, want 50", err, len(events.Items))
	}
	framework.Eventually(t, time.Minute, "the restored API server takes writes", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ConfigMaps(apps).Create(ctx, configMap("after-restore"), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return err == nil, err
	})
	if cm, err := kube.CoreV1().ConfigMaps(apps).Get(ctx, "after-restore", metav1.GetOptions{}); err != nil || cm.Data["owner"] != "after-restore" {
		t.Fatalf("reading the write back: %v", err)
	}
}
