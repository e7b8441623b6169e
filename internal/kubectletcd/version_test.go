package kubectletcd

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `kubectl etcd version` (and --version) prints the plugin's build on one line and
// exits 0, without a cluster to talk to.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var out, errOut bytes.Buffer
		if code := New(nil, &out, &errOut).Run(t.Context(), []string{arg}); code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, errOut.String())
		}
		line := strings.TrimSpace(out.String())
		if !strings.HasPrefix(line, "kubectl-etcd ") || !strings.HasSuffix(line, runtime.GOOS+"/"+runtime.GOARCH) || strings.Contains(line, "\n") {
			t.Errorf("%s printed %q, want one line: kubectl-etcd <version> ... <os>/<arch>", arg, line)
		}
	}
}
