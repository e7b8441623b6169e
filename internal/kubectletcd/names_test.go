package kubectletcd

import (
	"strings"
	"testing"
	"time"
)

// TestManualNamesFitALabel: the restore operator puts an EtcdRestore's name in a pod label, so
// the plugin's names stay within 63 characters for long cluster and schedule names, and keep
// the readable form for short ones.
func TestManualNamesFitALabel(t *testing.T) {
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	if got := manualName("main", "-restore-", now); got != "main-restore-20261127t020000z" {
		t.Errorf("short name: %s", got)
	}
	long := strings.Repeat("c", 56)
	a, b := manualName(long, "-restore-", now), manualName(long+"x", "-restore-", now)
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasSuffix(a, "-restore-20261127t020000z") {
		t.Errorf("long names: %s (%d), %s (%d)", a, len(a), b, len(b))
	}
}
