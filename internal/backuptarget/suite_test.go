package backuptarget

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

// k8s is a client of a real kube-apiserver (envtest); each test works in its own namespace.
var k8s client.Client

// TestMain starts kube-apiserver and etcd (envtest); no controller runs: the tests call the
// package's functions against the API.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testutil.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s = env.Client
	return m.Run()
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	return testutil.Namespace(t, k8s, "target")
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}
