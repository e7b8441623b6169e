package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// client-go's own log lines (here the warning a real API server sends in a Warning header, which
// client-go logs through klog) come out as the operator's JSON lines, not klog's text.
func TestKlogGoesThroughTheOperatorLogger(t *testing.T) {
	var out logBuffer
	SetupLogging(&zap.Options{Development: false}, &out)
	t.Cleanup(klog.ClearLogger)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Warning", `299 - "v1 ComponentStatus is deprecated in v1.19+"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	klog.InfoS("plain klog call", "component", "test")
	ctrl.Log.WithName("etcd-operator").Info("operator line")

	lines := out.lines()
	for _, want := range []struct{ logger, msg string }{
		{"klog", "Warning: v1 ComponentStatus is deprecated in v1.19+"},
		{"klog", "plain klog call"},
		{"etcd-operator", "operator line"},
	} {
		found := false
		for _, l := range lines {
			if l["logger"] == want.logger && l["msg"] == want.msg && l["level"] == "info" && l["ts"] != nil {
				found = true
			}
		}
		if !found {
			t.Errorf("no JSON line with logger %q, level info and msg %q; output:\n%s", want.logger, want.msg, out.String())
		}
	}
}

// logBuffer collects log output; lines splits it into JSON objects (a line that is not JSON,
// such as klog's own text format, becomes {"unparsed": line} and matches nothing).
type logBuffer struct{ bytes.Buffer }

func (b *logBuffer) lines() []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			m["unparsed"] = l
		}
		out = append(out, m)
	}
	return out
}
