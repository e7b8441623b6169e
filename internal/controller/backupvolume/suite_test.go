package backupvolume

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

var k8s client.Client

// testImage is the server image in these tests (envtest runs no pod).
const testImage = "registry.test/etcd-operator:v1"

// TestMain starts envtest and a manager with this controller alone: no backup or schedule
// controller acts on the objects the tests create to name a claim.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunManagerSuite(m, func(_ context.Context, env *testutil.Env, mgr ctrl.Manager) error {
		k8s = env.Client
		r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor("backup-operator"), Clock: clock.RealClock{}, Image: testImage, Recheck: time.Second}
		return r.SetupWithManager(mgr)
	}))
}
