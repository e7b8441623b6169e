//go:build e2e

package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Exec and PortForward run the kubectl that hack/build-k8s.sh built: client-go's SPDY stream
// packages need modules the main go.mod does not carry, and kubectl is the reference client.

// Kubectl runs kubectl against the cluster under test and returns its stdout and stderr.
func (f *Framework) Kubectl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, f.KubectlPath, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

// Exec runs command in a container of a pod (container may be empty for the pod's only
// container), with optional stdin, and returns its stdout and stderr.
func (f *Framework) Exec(ctx context.Context, ns, pod, container string, stdin io.Reader, command ...string) (stdout, stderr string, err error) {
	args := []string{"exec", "-n", ns, pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	if stdin != nil {
		args = append(args, "-i")
	}
	args = append(append(args, "--"), command...)
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, f.KubectlPath, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	if err = cmd.Run(); err != nil {
		err = fmt.Errorf("exec %v in %s/%s: %w: %s", command, ns, pod, err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// PortForward forwards a free local port on 127.0.0.1 to remotePort of target ("pod/NAME",
// "svc/NAME", "deployment/NAME") in ns, and returns the local address. The forward ends with the
// test. Works against any cluster, unlike DialContext, which needs routes to the pod network.
func (f *Framework) PortForward(t testing.TB, ns, target string, remotePort int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, f.KubectlPath, "--kubeconfig", f.Kubeconfig, "port-forward", "-n", ns,
		"--address", "127.0.0.1", target, fmt.Sprintf(":%d", remotePort))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatalf("port-forward: %v", err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("port-forward %s/%s: %v", ns, target, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwardingRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- "127.0.0.1:" + m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case addr := <-found:
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("port-forward %s/%s:%d did not start: %s", ns, target, remotePort, errOut.String())
	}
	return ""
}
