package cluster

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // String() of the parsed version; "" = error
		wantErr bool
	}{
		{in: "3.6.16", want: "3.6.16"},
		{in: "v3.5.35", want: "3.5.35"},
		{in: "3.6.0-rc.1", want: "3.6.0-rc.1"},
		{in: "", wantErr: true},
		{in: "3.6", wantErr: true},
		{in: "3.6.x", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "3.06.1", wantErr: true},
		{in: "3.6.16.1", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseVersion(%q) = %s, want an error", tc.in, v)
				}
				if !strings.Contains(err.Error(), `"`+tc.in+`"`) {
					t.Errorf("error %q does not name the version %q", err, tc.in)
				}
				return
			}
			if err != nil || v.String() != tc.want {
				t.Fatalf("ParseVersion(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{a: "3.5.35", b: "3.6.0", want: -1},
		{a: "v3.6.16", b: "3.6.16", want: 0},
		{a: "3.6.16", b: "3.6.9", want: 1},
		{a: "3.6.0-rc.1", b: "3.6.0", want: -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// A malformed version is never read as 0 (the old parser made "3.6.x" equal 3.6.0): for the
// lowest-of-a-set ordering it sorts first, so CheckUpgrade sees and reports it.
func TestCompareVersionsMalformedSortsFirst(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"3.6.x", "3.6.0", -1},
		{"3.6.0", "3.6.x", 1},
		{"3.6", "3.6.0", -1},
		{"3.5.35", "3.6.16", -1},
		{"3.6.16", "v3.6.16", 0},
		{"bad", "bad", 0},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCheckUpgradeMalformed(t *testing.T) {
	for _, tc := range []struct {
		from, to, mention string
	}{
		// The old parser read these as 3.6.0 / 3.6 and let them through.
		{"3.6.16", "3.6.x", `"3.6.x"`},
		{"3.6.16", "3.6", `"3.6"`},
		{"3.6.x", "3.6.16", `"3.6.x"`},
		{"3.5.2x", "3.6.16", `"3.5.2x"`},
		{"latest", "3.6.16", `"latest"`},
	} {
		err := CheckUpgrade(tc.from, tc.to)
		if err == nil {
			t.Errorf("CheckUpgrade(%q, %q) = nil, want an error naming %s", tc.from, tc.to, tc.mention)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "invalid etcd version") {
			t.Errorf("CheckUpgrade(%q, %q) = %q, want it to say %s is an invalid etcd version", tc.from, tc.to, err, tc.mention)
		}
	}
}
