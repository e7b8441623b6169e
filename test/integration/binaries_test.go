// Package integration runs the real operator binaries against a real kube-apiserver (envtest).
package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/testutil"
)

var (
	env  *testutil.Env
	bins string // directory with the three binaries, built once
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "operator-bins")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/etcd-operator", "./cmd/backup-operator", "./cmd/restore-operator")
	cmd.Dir = testutil.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building binaries: %v\n%s", err, out)
		return 1
	}
	bins = dir
	env, err = testutil.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	return m.Run()
}

// freePort returns a loopback address with a port nobody listens on.
func freePort(t *testing.T) string { return testutil.FreeAddr(t) }

// TestBinariesStartBecomeReadyAndStopOnSIGTERM starts each binary against the apiserver with
// leader election, waits for /readyz and for its Lease, sends SIGTERM and expects exit code 0.
func TestBinariesStartBecomeReadyAndStopOnSIGTERM(t *testing.T) {
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, binary := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		t.Run(binary, func(t *testing.T) {
			probe := freePort(t)
			args := []string{
				"--kubeconfig=" + kubeconfig,
				"--leader-elect", "--leader-election-namespace=default",
				"--metrics-bind-address=" + freePort(t),
				"--health-probe-bind-address=" + probe,
			}
			if binary == "etcd-operator" {
				args = append(args, "--create-crd") // the coreos two-step install path
			}
			var logs strings.Builder
			cmd := exec.Command(filepath.Join(bins, binary), args...)
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			waitReady(t, "http://"+probe+"/readyz", done, &logs)
			waitLease(t, binary+".etcd.database.coreos.com")

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s exited with %v after SIGTERM; logs:\n%s", binary, err, logs.String())
				}
			case <-time.After(45 * time.Second):
				t.Fatalf("%s did not exit within 45s of SIGTERM; logs:\n%s", binary, logs.String())
			}
		})
	}
}

func waitReady(t *testing.T, url string, done <-chan error, logs *strings.Builder) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("binary exited before it was ready (%v); logs:\n%s", err, logs.String())
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err == nil {
		return
	}
	t.Fatalf("%s never answered 200; logs:\n%s", url, logs.String())
}

func waitLease(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		lease := &coordinationv1.Lease{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err == nil {
		return
	}
	t.Fatalf("leader election Lease %s was never acquired", name)
}

// TestVersionFlag checks that --version prints the binary name and exits 0 without a cluster.
func TestVersionFlag(t *testing.T) {
	for _, binary := range []string{"etcd-operator", "backup-operator", "restore-operator"} {
		out, err := exec.Command(filepath.Join(bins, binary), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", binary, err, out)
		}
		if !strings.HasPrefix(string(out), binary+" ") {
			t.Fatalf("%s --version printed %q", binary, out)
		}
	}
}

// TestInvalidFlagsExit2 checks that a bad flag value is refused before anything starts.
func TestInvalidFlagsExit2(t *testing.T) {
	cmd := exec.Command(filepath.Join(bins, "backup-operator"), "--max-concurrent-reconciles=0")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
		t.Fatalf("expected exit code 2, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--max-concurrent-reconciles must be at least 1") {
		t.Fatalf("unexpected message: %s", out)
	}
}
