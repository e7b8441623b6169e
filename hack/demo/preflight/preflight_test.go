// Package preflight tests hack/demo/preflight/preflight.sh, the prerequisite check `make demo`
// runs before it builds anything.
package preflight

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// run runs preflight.sh against a checkout whose cache is empty (so no listener counts as the
// checkout's own cluster) with the apiserver's etcd on port etcdPort, and returns its output and
// exit code. Disk thresholds are 0: this test is about ports.
func run(t *testing.T, etcdPort int) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss (iproute2) is not installed")
	}
	cmd := exec.Command("bash", "preflight.sh")
	cmd.Env = append(os.Environ(), "CACHE_DIR="+t.TempDir(), "LC_ETCD_CLIENT_PORT="+strconv.Itoa(etcdPort),
		"PREFLIGHT_MIN_CACHE_GB=0", "PREFLIGHT_MIN_VAR_GB=0")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exitErr):
		return string(out), exitErr.ExitCode()
	}
	t.Fatalf("running preflight.sh: %v\n%s", err, out)
	return "", 0
}

func TestPortTakenByAnotherProcessIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	out, code := run(t, port)
	if code != 1 {
		t.Fatalf("exit code %d, want 1 with port %d taken; output:\n%s", code, port, out)
	}
	want := fmt.Sprintf("port: 127.0.0.1:%d/tcp (etcd of the apiserver) is taken by preflight.test (pid %d)", port, os.Getpid())
	if !strings.Contains(out, want) {
		t.Errorf("output does not say %q:\n%s", want, out)
	}
	if !strings.Contains(out, "nothing was built or started") {
		t.Errorf("output does not say that nothing was built:\n%s", out)
	}
}

func TestFreePortIsNotReported(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	out, _ := run(t, port)
	if strings.Contains(out, fmt.Sprintf(":%d/tcp", port)) {
		t.Errorf("free port %d reported as taken:\n%s", port, out)
	}
}
