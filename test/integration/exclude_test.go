package integration

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// TestExcludedNamespacesLeftAlone: the three operators run cluster-wide with
// --exclude-namespace naming two namespaces (those of a namespaced install next to them). The
// same EtcdCluster, EtcdBackup and EtcdRestore exist in a third namespace and in both excluded
// ones: the third's objects are reconciled (each says why it cannot go on), the excluded ones'
// never are (no status, no pod, no Service), even after they change.
func TestExcludedNamespacesLeftAlone(t *testing.T) {
	ctx := t.Context()
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var watched string
	var excluded []string
	for i := range 3 {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "exclude-"}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			watched = n.Name
		} else {
			excluded = append(excluded, n.Name)
		}
	}
	closed := freePort(t)
	objects := func(ns string) []client.Object {
		return []client.Object{
			&etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pending"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}},
			&etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing-secret"}, Spec: etcdv1beta2.BackupSpec{
				EtcdEndpoints: []string{"http://" + closed}, StorageType: "S3",
				BackupSource: etcdv1beta2.BackupSource{S3: &etcdv1beta2.S3Source{Path: "bucket/etcd.backup", AWSSecret: "nope", Endpoint: "http://" + closed}}}},
			&etcdv1beta2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing-backup"}, Spec: etcdv1beta2.RestoreSpec{
				EtcdCluster: etcdv1beta2.EtcdClusterRef{Name: "a"}, BackupRef: &etcdv1beta2.LocalObjectReference{Name: "ghost"}}},
		}
	}
	for _, ns := range append([]string{watched}, excluded...) {
		for _, o := range objects(ns) {
			create(t, o)
		}
	}

	exclude := "--exclude-namespace=" + strings.Join(excluded, ",")
	for _, b := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		op := startOperator(t, b, kubeconfig, exclude, "--allowed-etcd-endpoints="+closed)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s log:\n%s", b, op.logs.String())
			}
		})
	}
	for _, o := range objects(watched) {
		waitReason(t, o, watched, o.GetName(), etcdv1beta2.ConditionReady)
	}
	// A change of an excluded namespace's objects wakes nothing either; the watched
	// namespace's new cluster shows that the operators went on watching meanwhile.
	for _, ns := range excluded {
		c := &etcdv1beta2.EtcdCluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending"}, c); err != nil {
			t.Fatal(err)
		}
		c.Spec.Size = 3
		if err := env.Client.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	create(t, &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: "later"}, Spec: etcdv1beta2.ClusterSpec{Size: 1}})
	waitReason(t, &etcdv1beta2.EtcdCluster{}, watched, "later", etcdv1beta2.ConditionReady)

	for _, ns := range excluded {
		for _, o := range objects(ns) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
			if conds := conditionsOf(o); len(conds) > 0 {
				t.Errorf("%T %s/%s in an excluded namespace was reconciled: %+v", o, ns, o.GetName(), conds)
			}
		}
		for _, list := range []client.ObjectList{&corev1.PodList{}, &corev1.ServiceList{}} {
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if n := len(listItems(list)); n > 0 {
				t.Errorf("the operators made %d %T objects in excluded namespace %s: %v", n, list, ns, listItems(list))
			}
		}
	}
	// The pending cluster of the watched namespace got its pod and Services: the operator
	// that left the others alone did act where it was asked to.
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(watched)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Errorf("no member pod in the watched namespace %s", watched)
	}
}

// TestExcludeNeedsClusterWide: --exclude-namespace next to --watch-namespace is refused at start.
func TestExcludeNeedsClusterWide(t *testing.T) {
	out, err := exec.Command(filepath.Join(bins, "etcd-operator"), "--watch-namespace=a", "--exclude-namespace=b").CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
		t.Fatalf("expected exit code 2, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--exclude-namespace applies to a cluster-wide operator only") {
		t.Fatalf("unexpected message: %s", out)
	}
}

// listItems names the objects of a pod or Service list.
func listItems(list client.ObjectList) []string {
	var out []string
	switch l := list.(type) {
	case *corev1.PodList:
		for _, p := range l.Items {
			out = append(out, p.Name)
		}
	case *corev1.ServiceList:
		for _, s := range l.Items {
			out = append(out, s.Name)
		}
	}
	return out
}
