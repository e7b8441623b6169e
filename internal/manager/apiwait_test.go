package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// versionServer answers /version with 503 for the first failures requests, then with a version.
func versionServer(t *testing.T, failures int32) (*rest.Config, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		if calls.Add(1) <= failures {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.13"}`))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, &calls
}

func TestWaitForAPIServerWaitsUntilItAnswers(t *testing.T) {
	cfg, calls := versionServer(t, 3)
	if err := waitForAPIServer(context.Background(), cfg, logr.Discard(), 10*time.Second, 10*time.Millisecond); err != nil {
		t.Fatalf("waitForAPIServer: %v", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d calls to /version, want 4 (3 refused, then the answer)", n)
	}
}

func TestWaitForAPIServerGivesUp(t *testing.T) {
	cfg, _ := versionServer(t, 1<<30)
	err := waitForAPIServer(context.Background(), cfg, logr.Discard(), 100*time.Millisecond, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not reachable after 100ms") {
		t.Fatalf("err = %v, want the API server not reachable after 100ms", err)
	}
}

func TestWaitForAPIServerStopsWithContext(t *testing.T) {
	cfg, _ := versionServer(t, 1<<30)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitForAPIServer(ctx, cfg, logr.Discard(), time.Minute, 10*time.Millisecond); err == nil {
		t.Fatal("waitForAPIServer returned nil after its context ended")
	}
}
