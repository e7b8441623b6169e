package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// operator is a running operator binary.
type operator struct {
	// metrics is the address of its /metrics.
	metrics string
	// logs collects its output (read it only after the test).
	logs *strings.Builder
	// pid is its process.
	pid int
}

// startOperator runs binary against the envtest apiserver with metrics and probes on free
// loopback ports and extra flags, waits until it is ready, and stops it when the test ends.
func startOperator(t *testing.T, binary, kubeconfig string, args ...string) *operator {
	t.Helper()
	metricsAddr, probe := freePort(t), freePort(t)
	logs := &strings.Builder{}
	cmd := exec.Command(filepath.Join(bins, binary), append([]string{"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probe}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case err := <-done:
			t.Logf("%s stopped: %v", binary, err)
		case <-time.After(10 * time.Second):
		}
	})
	waitReady(t, "http://"+probe+"/readyz", done, logs)
	return &operator{metrics: metricsAddr, logs: logs, pid: cmd.Process.Pid}
}
