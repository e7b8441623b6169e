package kubename

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		base, suffix string
		maxLen       int
		want         string
	}{
		{"nightly", "-drill-1", 40, "nightly-drill-1"},
		{"abc", "-x", 5, "abc-x"},
		{"abcdefghij", "-x", 10, ""},
		{"Prod.etcd", "-x", 40, ""},
		{"0nightly", "-x", 40, ""},
		{"", "-x", 40, ""},
		{strings.Repeat("long-", 50), "-recovery-20260101000000", 63, ""},
	} {
		got := Fit(tc.base, tc.suffix, tc.maxLen)
		if tc.want != "" && got != tc.want {
			t.Errorf("Fit(%q, %q, %d) = %q, want %q", tc.base, tc.suffix, tc.maxLen, got, tc.want)
		}
		if errs := validation.IsDNS1035Label(got); len(errs) > 0 || len(got) > tc.maxLen || !strings.HasSuffix(got, tc.suffix) {
			t.Errorf("Fit(%q, %q, %d) = %q (%d chars): %v", tc.base, tc.suffix, tc.maxLen, got, len(got), errs)
		}
		if again := Fit(tc.base, tc.suffix, tc.maxLen); again != got {
			t.Errorf("Fit(%q) is not deterministic: %q, then %q", tc.base, got, again)
		}
	}
	if a, b := Fit(strings.Repeat("x", 40)+"a", "-s", 40), Fit(strings.Repeat("x", 40)+"b", "-s", 40); a == b {
		t.Errorf("shortened names collide: %s", a)
	}
}
