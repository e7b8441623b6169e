package reason

import (
	"errors"
	"fmt"
	"testing"
)

func TestReasonSurvivesWrapping(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name      string
		err       error
		reason    string
		transient bool
	}{
		{"plain error", base, "", false},
		{"terminal", New("SecretNotFound", base), "SecretNotFound", false},
		{"formatted", Errorf("BackupCorrupt", "object %q: %w", "k", base), "BackupCorrupt", false},
		{"transient", Transient("StorageUnreachable", base), "StorageUnreachable", true},
		{"wrapped once more", fmt.Errorf("resolving: %w", Transient("Timeout", base)), "Timeout", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.reason {
				t.Errorf("Of = %q, want %q", got, tc.reason)
			}
			if got := IsTransient(tc.err); got != tc.transient {
				t.Errorf("IsTransient = %v, want %v", got, tc.transient)
			}
			if tc.reason != "" && !errors.Is(tc.err, base) {
				t.Errorf("the cause is lost: %v", tc.err)
			}
			if got := OrDefault(tc.err, "Fallback"); tc.reason == "" && got != "Fallback" {
				t.Errorf("OrDefault = %q, want Fallback", got)
			}
		})
	}
}
