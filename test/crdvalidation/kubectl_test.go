package crdvalidation

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// kubectl is the kubectl the project builds (next to the envtest binaries), with a kubeconfig
// whose current context is namespace ns of the envtest apiserver: commands are run as a user
// would type them, without -n.
type kubectl struct {
	bin, kubeconfig string
}

func newKubectl(t *testing.T, ns string) *kubectl {
	t.Helper()
	assets, err := testutil.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	k := &kubectl{bin: filepath.Join(assets, "kubectl")}
	if k.kubeconfig, err = env.KubeconfigFile(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	k.must(t, "config", "set-context", "--current", "--namespace="+ns)
	return k
}

// environ is the environment of a shell that finds this kubectl and kubeconfig first.
func (k *kubectl) environ() []string {
	return append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "PATH="+filepath.Dir(k.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// run runs kubectl with args and returns stdout and the error with stderr.
func (k *kubectl) run(args ...string) (string, error) {
	cmd := exec.Command(k.bin, args...)
	cmd.Env = k.environ()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), &cmdError{err: err, stderr: errOut.String()}
	}
	return out.String(), nil
}

func (k *kubectl) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k.run(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// shell runs script with bash -euo pipefail, as a user pasting it into a terminal that stops
// at the first error would.
func (k *kubectl) shell(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = k.environ()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("script failed: %v\nstderr:\n%s\nscript:\n%s", err, errOut.String(), script)
	}
	return out.String()
}

type cmdError struct {
	err    error
	stderr string
}

func (e *cmdError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// markReady plays the operators until ctx ends: every object of the given lists in ns that has
// no Ready condition gets Ready=True, so that kubectl wait --for=condition=Ready returns.
func markReady(ctx context.Context, ns string, lists ...client.ObjectList) {
	for ctx.Err() == nil {
		for _, l := range lists {
			if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
				continue
			}
			_ = meta.EachListItem(l, func(o runtime.Object) error {
				obj := o.(client.Object)
				conds := conditionsOf(obj)
				if conds == nil || meta.FindStatusCondition(*conds, etcdv1beta2.ConditionReady) != nil {
					return nil
				}
				meta.SetStatusCondition(conds, metav1.Condition{Type: etcdv1beta2.ConditionReady, Status: metav1.ConditionTrue,
					Reason: "Test", Message: "set by the test", ObservedGeneration: obj.GetGeneration()})
				_ = env.Client.Status().Update(ctx, obj)
				return nil
			})
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func conditionsOf(obj client.Object) *[]metav1.Condition {
	switch o := obj.(type) {
	case *etcdv1beta2.EtcdCluster:
		return &o.Status.Conditions
	case *etcdv1beta2.EtcdBackup:
		return &o.Status.Conditions
	case *etcdv1beta2.EtcdBackupSchedule:
		return &o.Status.Conditions
	case *etcdv1beta2.EtcdRestore:
		return &o.Status.Conditions
	}
	return nil
}
