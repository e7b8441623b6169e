package kubectletcd

import (
	"bytes"
	"strings"
	"testing"
)

// TestGlobalFlagsBeforeTheCommand: `kubectl etcd -n prod status main`, as kubectl passes a
// plugin the line, reaches the command with its namespace and kubeconfig, in both flag forms.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--kubeconfig", kubeconfig, "-n", "nowhere", "status", "nosuch"},
		{"--kubeconfig=" + kubeconfig, "--namespace=nowhere", "status", "nosuch"},
	} {
		var out, errOut bytes.Buffer
		code := New(nil, &out, &errOut).Run(t.Context(), args)
		// The cluster does not exist: the command ran, asked the API server, and says so.
		if code != 1 || !strings.Contains(errOut.String(), "nosuch") || strings.Contains(errOut.String(), "unknown command") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 naming the missing cluster", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := New(nil, &out, &errOut).Run(t.Context(), []string{"-n", "x", "version"}); code != 0 {
		t.Errorf("-n x version: exit %d, %q", code, errOut.String())
	}
}
