//go:build e2e && bench

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
)

// operatorPID finds the process of an operator's pod on this machine: the local cluster's only
// node is this host, so its containers' processes are in our /proc. It matches the binary's
// name in argv[0] and a pod's cgroup (the envtest suites run the same binaries outside pods).
func operatorPID(t *testing.T, binary string) string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != binary {
			continue
		}
		if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil && strings.Contains(string(cg), "kubepods") {
			return filepath.Base(dir)
		}
	}
	t.Fatalf("no %s process of a pod on this host", binary)
	return ""
}

// operatorPeak measures the peak RSS of an operator's process during do: it resets the
// process's VmHWM, runs do and returns the peak in MiB.
func operatorPeak(t *testing.T, binary string, do func()) float64 {
	t.Helper()
	pid := operatorPID(t, binary)
	if err := benchutil.ResetPeak(pid); err != nil {
		t.Fatalf("resetting the peak RSS of %s (pid %s): %v", binary, pid, err)
	}
	do()
	return float64(benchutil.PeakRSS(pid)) / benchutil.MiB
}
