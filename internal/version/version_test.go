package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name                  string
		version, commit, date string
		want                  []string
	}{
		{"stamped", "v1.2.3", "0123abcd", "2026-01-02T03:04:05Z",
			[]string{"etcd-operator v1.2.3 commit 0123abcd built 2026-01-02T03:04:05Z go"}},
		{"unstamped", "dev", "", "", []string{"etcd-operator dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(v, c, d string) { Version, Commit, Date = v, c, d }(Version, Commit, Date)
			Version, Commit, Date = tt.version, tt.commit, tt.date
			got := String("etcd-operator")
			for _, w := range tt.want {
				if !strings.HasPrefix(got, w) {
					t.Errorf("String() = %q, want prefix %q", got, w)
				}
			}
			if !strings.Contains(got, "linux/") && !strings.Contains(got, "/") {
				t.Errorf("String() = %q has no platform", got)
			}
		})
	}
}
