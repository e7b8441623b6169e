package etcdbackup

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubeid"
	"github.com/etcd-operator/etcd-operator/internal/options"
	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// k8s is the envtest client shared by the tests; each test works in its own namespace.
var k8s client.Client

// TestMain starts a real kube-apiserver and etcd (envtest) and a manager running the EtcdBackup
// controller with short etcd timeouts and a 1 s retry backoff.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return testutil.RunManagerSuite(m, func(ctx context.Context, env *testutil.Env, mgr ctrl.Manager) error {
		k8s = env.Client
		opts := options.New("backup-operator")
		opts.EtcdDialTimeout, opts.EtcdRequestTimeout = 2*time.Second, 2*time.Second
		opts.AllowedEtcdEndpoints = []string{"127.0.0.1"} // the tests' etcd runs on loopback
		// As manager.Run reads it: this kube-apiserver's kube-system namespace.
		var err error
		if opts.KubeID, err = kubeid.Lookup(ctx, env.Client, ""); err != nil {
			return err
		}
		r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(opts.Binary), Options: opts, RetryBackoff: time.Second}
		if err := SetupMetrics(mgr, opts); err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	return testutil.Namespace(t, k8s, "backup")
}

func createSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// waitPhase waits until the backup reaches phase and returns it.
func waitPhase(t *testing.T, ns, name string, phase etcdv1beta2.BackupPhase, timeout time.Duration) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{}
	testutil.Eventually(t, timeout, fmt.Sprintf("EtcdBackup %s/%s %s", ns, name, phase), func() (bool, string) {
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			return false, err.Error()
		}
		return b.Status.Phase == phase, fmt.Sprintf("phase=%q reason=%q attempts=%d", b.Status.Phase, b.Status.Reason, b.Status.Attempts)
	})
	return b
}
